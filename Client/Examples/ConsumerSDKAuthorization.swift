#if canImport(GoogleRidesharingConsumer)
    import Foundation
    import GoogleRidesharingConsumer
    import TokenGateClient

    /// The Consumer SDK's token provider, backed by TokenGate.
    ///
    /// ```swift
    /// let authorization = ConsumerSDKAuthorization(provider: TokenGateExamples.makeProvider(…))
    /// GMTCServices.setAccessTokenProvider(authorization, providerID: "acme-rides")
    /// ```
    ///
    /// The SDK may call `fetchToken` on any thread and as often as every location update: the provider serves the
    /// cached token, fetches once for concurrent calls and refreshes ahead of expiry. When the rider's trip changes
    /// the next call names a new trip; `switchTo` drops the previous trip's token.
    final class ConsumerSDKAuthorization: NSObject, GMTCAuthorization {
        private let provider: TokenProvider

        init(provider: TokenProvider) {
            self.provider = provider
        }

        func fetchToken(
            with authorizationContext: GMTCAuthorizationContext?,
            completion: @escaping GMTCAuthTokenFetchCompletionHandler
        ) {
            guard let tripID = authorizationContext?.tripID, !tripID.isEmpty else {
                completion(
                    nil, TokenGateClientError(code: .invalidRequest, message: "the Consumer SDK gave no trip ID"))
                return
            }
            let completion = SDKCompletion(handler: completion)
            Task { [provider] in
                do {
                    await provider.switchTo(.trip(tripID))
                    let token = try await provider.token(for: .trip(tripID))
                    completion.handler(token, nil)
                } catch {
                    completion.handler(nil, error)
                }
            }
        }
    }
#endif
