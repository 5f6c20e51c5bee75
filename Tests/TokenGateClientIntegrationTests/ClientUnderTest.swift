import Foundation
import Testing
import TokenGateClient
import TokenGateTesting

/// A `TokenProvider` pointed at a running gateway, with its counting transport and the shared clock.
struct ClientUnderTest {
    let provider: TokenProvider
    let transport: CountingTransport
    let clock: ManualTokenClock

    /// The token cached for `context` once the background fetch answered by response number `responses` has
    /// been stored: polls the provider (no sleeping) until its token was received after `previous`.
    func tokenAfterBackgroundFetch(
        for context: TokenContext, responses: Int, receivedAfter previous: Date
    ) async throws -> FleetEngineToken {
        await transport.waitForResponses(responses)
        // The transport has answered; the provider stores the result on its actor right after parsing it.
        for _ in 0..<10_000 {
            let current = try await provider.fleetEngineToken(for: context)
            if current.receivedAt > previous { return current }
            await Task.yield()
        }
        Issue.record("the background fetch's token was never stored")
        return try await provider.fleetEngineToken(for: context)
    }
}

extension ClientGatewayFixture {
    /// A fresh client (another app instance) of `gateway`, sending `key`.
    func client(
        of gateway: RunningGateway, key: String = ClientGatewayFixture.appKey, format: TokenResponseFormat = .tokenGate,
        retryPolicy: RetryPolicy = .default
    ) throws -> ClientUnderTest {
        let transport = CountingTransport()
        let tokenClock = ManualTokenClock(clock)
        let configuration = TokenProvider.Configuration(
            baseURL: try #require(URL(string: gateway.baseURL)), providerID: "acme-rides", responseFormat: format,
            retryPolicy: retryPolicy)
        let provider = TokenProvider(configuration: configuration, transport: transport, clock: tokenClock) { key }
        return ClientUnderTest(provider: provider, transport: transport, clock: tokenClock)
    }
}
