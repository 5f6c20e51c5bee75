import Foundation
import JOSE
import Logging
import Testing
import TokenGateCoreTesting

@testable import TokenGateCore

/// The two lockouts an independent run reproduced with the bundled limits (600 failures a minute per provider,
/// burst 100; 60 a minute per address, burst 20): bad keys from many addresses emptied the provider's allowance and
/// then refused valid callers, and a few bad keys a second from one address refused everyone behind it. A good
/// credential is now never refused by somebody else's failures.
@Suite struct FailedAuthLockoutTests {
    static let goodKey = "tg_good_key"

    let clock = ManualClock(wallSeconds: 1_700_000_000)
    let idp: TestIdentityProvider
    let service: TokenService

    init() async throws {
        idp = try TestIdentityProvider()
        let directory = URL(fileURLWithPath: try TemporaryDirectory(prefix: "lockout").path)
        let jwksPath = directory.appendingPathComponent("idp.jwks.json").path
        #expect(FileManager.default.createFile(atPath: jwksPath, contents: Data(try idp.jwks.publicJSON())))
        let riderApp = """
            { name: rider-app, type: jwt, jwksFile: "\(jwksPath)", issuer: "\(TestIdentityProvider.issuer)", \
            audience: \(TestIdentityProvider.audience), allow: { consumer: { claim: trips } } }
            """
        let yaml = ProviderYAML.config(
            ProviderYAML(
                "acme-rides", backend: .flow("{ type: inert, circuitBreaker: off }"),
                clients: [ProviderYAML.apiKey("acme-backend", TestAPIKey(Self.goodKey)), riderApp]))
        let assembler = GatewayAssembler(
            registry: BackendRegistry([InertBackendFactory()]), environment: [:], clock: clock.gatewayClock,
            logger: Logger(label: "lockout", factory: { _ in SwiftLogNoOpLogHandler() }), jwksFetcher: ScriptedJWKSFetcher(.failure("none")))
        let generation = try await assembler.build(
            bytes: Array(yaml.utf8), file: ConfigFile(path: directory.appendingPathComponent("config.yaml").path, environment: [:]))
        service = TokenService(
            generation: generation, formatter: { _ in TokenOnlyFormat() }, clock: clock.gatewayClock,
            logger: Logger(label: "lockout", factory: { _ in SwiftLogNoOpLogHandler() }))
    }

    /// The error of one consumer-token request from `peer` (127.0.0.x), or nil; the inert backend's failure
    /// (`backend_error`) means every check before the backend passed.
    func outcome(_ authorization: String, peer: UInt32) async -> TokenGateError.Code? {
        let query = TokenQuery(
            providerID: "acme-rides", tokenType: "consumer", parameters: ["tripId": "trip-1"], authorization: authorization,
            peer: PeerAddress(ipv4: 0x7F00_0000 | peer))
        do {
            _ = try await service.token(for: query)
            return nil
        } catch {
            return error.code
        }
    }

    var verifications: Int { service.generation.providers[AuthFixtures.acme]!.authenticator.sessionVerificationCount }

    @Test func badKeysFromTwoHundredAddressesRefuseNoValidCaller() async throws {
        var refusedAttackers = 0
        for round in 0..<30 {
            for peer in UInt32(10)..<210 where await outcome("Bearer tg_wrong_\(round)", peer: peer) == .rateLimited {
                refusedAttackers += 1
            }
        }
        // The flood was limited: past the provider's burst of 100 its failures are answered 429.
        #expect(refusedAttackers >= 5_800)
        // A valid key: from a new address, and from an address that was among the attackers (behind one NAT).
        for peer: UInt32 in [2, 3, 10, 209] {
            for _ in 0..<4 { #expect(await outcome("Bearer \(Self.goodKey)", peer: peer) == .backendError) }
        }
        // A session token never seen costs a signature check: done for a peer with no failures…
        let token = try idp.sessionToken(now: clock.now, ["trips": ["trip-1"]])
        #expect(await outcome("Bearer \(token)", peer: 2) == .backendError)
        #expect(verifications == 1)
        // …shed for one of the failing peers while the provider's allowance is spent; once remembered, it passes.
        let another = try idp.sessionToken(now: clock.now, ["trips": ["trip-1"], "sub": "rider-2"])
        #expect(await outcome("Bearer \(another)", peer: 10) == .rateLimited)
        #expect(verifications == 1)
        #expect(await outcome("Bearer \(token)", peer: 10) == .backendError)
    }

    @Test func aSlowTrickleOfBadKeysFromEveryAddressRefusesNoValidRequest() async throws {
        // 20 addresses at one bad key a second each (each under its own limit), for a minute; valid callers ask in
        // between, from those addresses and others.
        var refusedValid = 0
        var validRequests = 0
        for second in 0..<60 {
            for peer in UInt32(10)..<30 {
                _ = await outcome("Bearer tg_wrong", peer: peer)
                validRequests += 1
                // Every other second from the failing address itself (callers behind one NAT), else from another.
                let validPeer = second.isMultiple(of: 2) ? peer : peer + 100
                if await outcome("Bearer \(Self.goodKey)", peer: validPeer) != .backendError { refusedValid += 1 }
            }
            clock.advance(by: .seconds(1))
        }
        #expect(validRequests == 1_200)
        #expect(refusedValid == 0)
    }
}
