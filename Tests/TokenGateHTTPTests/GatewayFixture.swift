import Foundation
import JOSE
import Logging
import OpenSSLPrimitives
import TokenGateCore
import TokenGateCoreTesting
import TokenGateTesting

/// A two-tenant configuration with API-key, revoked and session-JWT callers.
struct GatewayFixture {
    static let apiKey = "acme-backend-key-0123456789"
    static let revokedKey = "acme-revoked-key-0123456789"
    static let otherTenantKey = "other-fleet-key-0123456789"
    /// Admin API keys: one for every provider, one for acme-rides only, one for other-fleet only.
    static let globalAdminKey = "global-admin-key-0123456789"
    static let acmeAdminKey = "acme-admin-key-0123456789"
    static let otherAdminKey = "other-admin-key-0123456789"
    static let sessionIssuer = "https://login.acme.test/"

    let directory: TemporaryDirectory
    let clock = ManualClock()
    let probe = BackendProbe()
    let identityProvider: JWSKey

    /// `server` is the body of a `server:` section (a flow mapping); `cors` acme-rides' `cors:` section.
    init(
        cache: String = "{ minRemaining: 5m, refreshBefore: 10m, maxEntries: 1000 }", rateLimits: String = "{}", response: String? = nil,
        server: String? = nil, cors: String? = nil, audit: String? = nil, endedContexts: String = "{ refuseFor: 2h }"
    ) throws {
        directory = try TemporaryDirectory()
        identityProvider = try JWSKey.generate(.rs256, keyID: "idp-1")
        try directory.write("idp-jwks.json", try JWKSet(keys: [identityProvider.publicKey()]).publicJSON())
        let settings =
            [
                "compatibility: google-samples", "adminKeys: [\(TestAPIKey(Self.acmeAdminKey).adminKey("acme-dispatch-ops"))]",
                "cache: \(cache)", "rateLimits: \(rateLimits)",
            ] + [response.map { "response: \($0)" }, cors.map { "cors: \($0)" }].compactMap { $0 }
        let acme = ProviderYAML(
            "acme-rides", settings: settings,
            backend: .staticKey([
                ("consumer", "keys/consumer.json"), ("driver", "keys/driver.json"), ("delivery-driver", "keys/delivery.json"),
                ("delivery-consumer", "keys/delivery.json"),
            ]),
            clients: [
                ProviderYAML.apiKey(
                    "dispatch", TestAPIKey(Self.apiKey), allow: "{ consumer: any, driver: any, delivery-driver: any, delivery-consumer: any }"),
                ProviderYAML.apiKey("retired", TestAPIKey(Self.revokedKey), extra: "revoked: true"),
                """
                { name: rider-app, type: jwt, jwksFile: idp-jwks.json, issuer: "\(Self.sessionIssuer)", audience: tokengate, \
                allow: { consumer: { claim: trips }, driver: { claim: vehicle } } }
                """,
            ])
        let other = ProviderYAML(
            "other-fleet", settings: ["adminKeys: [\(TestAPIKey(Self.otherAdminKey).adminKey("other-ops"))]"],
            backend: .staticKey(["consumer"], file: "keys/other.json"),
            clients: [ProviderYAML.apiKey("other-dispatch", TestAPIKey(Self.otherTenantKey))])
        let preamble =
            (server.map { "server: \($0)\n" } ?? "") + (audit.map { "audit: \($0)\n" } ?? "")
            + "adminKeys:\n  - \(TestAPIKey(Self.globalAdminKey).adminKey("ops"))\nendedContexts: \(endedContexts)\n"
        try directory.write("config.yaml", ProviderYAML.config(preamble: preamble, acme, other))
    }

    var configPath: String { "\(directory.path)/config.yaml" }

    /// The configuration as it is on disk now.
    func configText() throws -> String { try String(contentsOfFile: configPath, encoding: .utf8) }

    /// Replaces config.yaml atomically (a new file renamed over it), as an operator's deploy tool would.
    func rewriteConfig(_ transform: (String) -> String) throws {
        let text = transform(try configText())
        try directory.write("config.yaml.new", text)
        guard rename("\(directory.path)/config.yaml.new", configPath) == 0 else { throw CocoaError(.fileWriteUnknown) }
    }

    var registry: BackendRegistry { BackendRegistry([ProbedFactory(probe: probe)]) }

    /// Starts the gateway on this fixture and runs `body` against it.
    func withGateway<Result: Sendable>(
        logs: LogRecorder? = nil,
        watchInterval: Duration? = nil,
        _ body: (RunningGateway) async throws -> Result
    ) async throws -> Result {
        defer { directory.remove() }
        return try await RunningGateway.with(
            configuration: configPath,
            registry: registry,
            clock: clock.gatewayClock,
            logger: logs?.logger ?? Logger(label: "tokengate-test", factory: { _ in SwiftLogNoOpLogHandler() }),
            watchInterval: watchInterval,
            body
        )
    }

    /// A session token from the fixture's identity provider.
    func sessionToken(subject: String = "rider-1", claims extra: JSONObject, lifetime: Int64 = 3600, issuer: String = sessionIssuer) throws -> String
    {
        var claims = JSONObject()
        claims["iss"] = .string(issuer)
        claims["sub"] = .string(subject)
        claims["aud"] = .string("tokengate")
        claims["iat"] = .integer(clock.now)
        claims["exp"] = .integer(clock.now + lifetime)
        for (key, value) in extra { claims[key] = value }
        return try JWSSigner(key: identityProvider).sign(claims: claims)
    }
}
