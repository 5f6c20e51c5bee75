#if canImport(GoogleRidesharingDriver)
    import Foundation
    import GoogleRidesharingDriver
    import TokenGateClient

    /// The Driver SDK's token provider, backed by TokenGate.
    ///
    /// ```swift
    /// let authorization = DriverSDKAuthorization(provider: TokenGateExamples.makeProvider(…))
    /// let driverContext = GMTDDriverContext(accessTokenProvider: authorization, providerID: "acme-rides", …)
    /// ```
    ///
    /// The SDK asks at every location update, possibly from several threads: the provider serves the cached token,
    /// fetches once for concurrent calls and refreshes ahead of expiry. A driver switching vehicles gets a new
    /// vehicle ID; `switchTo` drops the previous vehicle's token.
    final class DriverSDKAuthorization: NSObject, GMTDAuthorization {
        private let provider: TokenProvider

        init(provider: TokenProvider) {
            self.provider = provider
        }

        func fetchToken(
            with authorizationContext: GMTDAuthorizationContext?,
            completion: @escaping GMTDAuthTokenFetchCompletionHandler
        ) {
            guard let vehicleID = authorizationContext?.vehicleID, !vehicleID.isEmpty else {
                completion(
                    nil, TokenGateClientError(code: .invalidRequest, message: "the Driver SDK gave no vehicle ID"))
                return
            }
            let completion = SDKCompletion(handler: completion)
            Task { [provider] in
                do {
                    await provider.switchTo(.vehicle(vehicleID))
                    let token = try await provider.token(for: .vehicle(vehicleID))
                    completion.handler(token, nil)
                } catch {
                    completion.handler(nil, error)
                }
            }
        }
    }
#endif
