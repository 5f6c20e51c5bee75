import Foundation
import TokenGateClient

/// How an app wires `TokenGateClient` into Google's Mobility SDKs.
///
/// - `ConsumerSDKAuthorization.swift`: a `GMTCAuthorization` for the Consumer SDK (riders, `tripID`), compiled where
///   `GoogleRidesharingConsumer` can be imported.
/// - `DriverSDKAuthorization.swift`: a `GMTDAuthorization` for the Driver SDK (drivers, `vehicleID`), compiled where
///   `GoogleRidesharingDriver` can be imported.
///
/// Both replace the SDK samples' hand-written fetchers, which read `TOKEN_EXPIRATION` with two different meanings,
/// keep no safety margin, race under concurrent calls and fetch once per caller. This file holds what builds on
/// every platform, so the target is never empty.
enum TokenGateExamples {
    /// One provider per app, shared by every SDK callback.
    ///
    /// - Parameters:
    ///   - gatewayURL: the TokenGate base URL, e.g. `https://tokens.example.com`.
    ///   - providerID: the Google Cloud project ID the app's Fleet Engine lives in.
    ///   - session: returns the signed-in user's current session token (the gateway checks the user is on the trip
    ///     or drives the vehicle).
    static func makeProvider(
        gatewayURL: URL, providerID: String, session: @escaping @Sendable () async throws -> String
    ) -> TokenProvider {
        TokenProvider(configuration: .init(baseURL: gatewayURL, providerID: providerID), credential: session)
    }

    /// An app whose token server speaks Google's on-demand sample shape (`jwt`, `expirationTimestamp` in epoch
    /// milliseconds) keeps its apps' parsing assumptions and gains caching and retries.
    static func makeLegacyProvider(
        gatewayURL: URL, providerID: String, session: @escaping @Sendable () async throws -> String
    ) -> TokenProvider {
        let configuration = TokenProvider.Configuration(
            baseURL: gatewayURL, providerID: providerID, responseFormat: .onDemandSample)
        return TokenProvider(configuration: configuration, credential: session)
    }
}

/// Carries an Objective-C SDK's completion handler into a `Task`.
///
/// `@unchecked` because the SDKs' handler types are not `Sendable`: the Mobility SDKs document that the handler
/// may be called from any thread, and the adapters call it exactly once.
struct SDKCompletion<Handler>: @unchecked Sendable {
    let handler: Handler
}
