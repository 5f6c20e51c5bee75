import JOSE
import TokenGateCore
import TokenGateTesting

/// A real gateway for the client to talk to: one provider with API-key callers, a second tenant, a probed signer,
/// and one ManualClock that both the gateway and the client (through ``ManualTokenClock``) read.
struct ClientGatewayFixture {
    /// Allowed consumer and driver tokens for any ID.
    static let appKey = "acme-app-key-0123456789"
    /// Allowed consumer tokens only.
    static let riderOnlyKey = "acme-rider-only-key-0123456789"
    /// A caller of the other tenant.
    static let otherTenantKey = "other-fleet-key-0123456789"
    /// Known to nobody.
    static let unknownKey = "not-a-known-key-0123456789"

    /// The gateway's defaults: never hand out less than 5 minutes, refresh ahead from 10 minutes before expiry.
    static let defaultCache = "{ minRemaining: 5m, refreshBefore: 10m, maxEntries: 1000 }"

    let directory: TemporaryDirectory
    let clock = ManualClock()
    let probe = BackendProbe()

    /// `cache`, `rateLimits` and `response` are YAML flow mappings for the `acme-rides` provider.
    init(cache: String = defaultCache, rateLimits: String = "{}", response: String? = nil) throws {
        directory = try TemporaryDirectory()
        let acme = ProviderYAML(
            "acme-rides", settings: ["cache: \(cache)", "rateLimits: \(rateLimits)"] + (response.map { ["response: \($0)"] } ?? []),
            backend: .staticKey([("consumer", "keys/consumer.json"), ("driver", "keys/driver.json")]),
            clients: [
                ProviderYAML.apiKey("app", TestAPIKey(Self.appKey), allow: "{ consumer: any, driver: any }"),
                ProviderYAML.apiKey("rider-only", TestAPIKey(Self.riderOnlyKey)),
            ])
        let other = ProviderYAML(
            "other-fleet", backend: .staticKey(["consumer"], file: "keys/other.json"),
            clients: [ProviderYAML.apiKey("other-app", TestAPIKey(Self.otherTenantKey))])
        try directory.write("config.yaml", ProviderYAML.config(acme, other))
    }

    /// Starts the gateway on 127.0.0.1 and an ephemeral port, runs `body`, stops it and removes the files.
    func withGateway<Result: Sendable>(_ body: (RunningGateway) async throws -> Result) async throws -> Result {
        defer { directory.remove() }
        return try await RunningGateway.with(
            configuration: "\(directory.path)/config.yaml", registry: BackendRegistry([ProbedFactory(probe: probe)]),
            clock: clock.gatewayClock, body)
    }

    /// The `tripid` of a consumer token's `authorization` claim (decoded, not verified: the gateway verified it).
    static func tripClaim(of token: String) -> String? {
        guard case .object(let authorization)? = JWTVerifier.decodeUnverified(token).claims?["authorization"] else {
            return nil
        }
        return authorization["tripid"]?.stringValue
    }
}

extension RunningGateway {
    /// Returns once the gateway's own refresh-ahead fetches have finished (for files that do not import
    /// TokenGateCore, whose `TokenContext` would clash with the client's).
    func waitForGatewayRefreshes() async { await service.waitForBackgroundRefreshes() }
}
