import AsyncHTTPClient
import JOSE
import Logging
import OutboundHTTP
import Synchronization
import Testing
import TokenGateCore
import TokenGateTesting

@testable import UpstreamTokenServer

/// One test's world: a scripted upstream, a client configured as the gateway configures it, a signing key the
/// upstream's JWKS publishes, a fixed wall clock, a manual monotonic clock, recorded backoff sleeps and logs.
struct UpstreamFixture: Sendable {
    static let now: Int64 = 1_800_000_000
    static let serviceAccount = "signer@acme-rides.iam.gserviceaccount.com"
    static let provider = ProviderID("acme-rides")!
    static let trip = TokenContext.trip(ContextID("trip-42")!)

    let upstream: ScriptedUpstream
    let client: HTTPClient
    let signer: ServiceAccountKey
    let monotonic = Locked<UInt64>(1_000_000_000)
    let sleeps = Locked<[Duration]>([])
    let logs = LogRecorder()

    /// Runs `body` with a fresh fixture and tears it down afterwards, whatever happens.
    static func run(_ body: (UpstreamFixture) async throws -> Void) async throws {
        let upstream = try await ScriptedUpstream.start()
        let client = HTTPClient(
            eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: OutboundExchange.clientConfiguration())
        let fixture = UpstreamFixture(
            upstream: upstream,
            client: client,
            signer: TestKeys.signer
        )
        fixture.upstream.script("/jwks", [.json(try fixture.jwks([fixture.signer.key]))])
        do {
            try await body(fixture)
        } catch {
            try? await client.shutdown()
            await upstream.stop()
            throw error
        }
        try await client.shutdown()
        await upstream.stop()
    }

    /// The `backend:` section used unless a test gives its own; `extra` lines are appended.
    /// Timeouts no loaded machine reaches: these tests count calls and retries, not seconds (the retry sleeps are
    /// recorded, not slept).
    static let generousTimeouts = "{ connect: 60s, total: 120s }"

    func config(url: String? = nil, extra: String = "", timeouts: String = generousTimeouts) -> String {
        """
        backend:
          type: upstream-http
          url: \(url ?? "\(upstream.baseURL)/token?trip={tripId}")
          tokenTypes: [consumer, driver]
          timeouts: \(timeouts)
          retries: { maxAttempts: 3, initialBackoff: 10ms, maxBackoff: 50ms }
          verify:
            - jwksUrl: \(upstream.baseURL)/jwks
              serviceAccount: \(Self.serviceAccount)
        \(extra)
        """
    }

    /// Builds a backend from `yaml` (a document whose `backend:` is the section) through the factory.
    func backend(_ yaml: String? = nil, environment: [String: String] = [:], client: HTTPClient? = nil) async throws -> any TokenBackend {
        let root = try ConfigNode.parse(
            Array((yaml ?? config()).utf8), file: ConfigFile(path: "/etc/tokengate/config.yaml", environment: environment))
        let section = try #require(try root.entries().first { $0.key == "backend" }?.node)
        let clock = TokenGateClock(wallSeconds: { Self.now }, monotonicNanoseconds: { [monotonic] in monotonic.withLock { $0 } })
        let timing = RetryTiming(sleep: { [sleeps] delay in sleeps.withLock { $0.append(delay) } }, jitter: { 1 })
        let factory = UpstreamTokenServerFactory(httpClient: client ?? self.client, timing: timing)
        return try await factory.makeBackend(
            BackendContext(provider: Self.provider, section: section, audience: FleetEngineClaims.defaultAudience, clock: clock, logger: logs.logger)
        )
    }

    /// Moves the monotonic clock on.
    func advance(seconds: UInt64) { monotonic.withLock { $0 += seconds * 1_000_000_000 } }

    /// A token for `context` signed with `key` (the fixture's signer by default).
    func token(
        for context: TokenContext = trip,
        key: JWSKey? = nil,
        issuedAt: Int64 = now,
        lifetime: Int64 = 3600,
        serviceAccount: String = serviceAccount
    ) throws -> String {
        let claims = FleetEngineClaims.claims(
            serviceAccount: serviceAccount,
            audience: FleetEngineClaims.defaultAudience,
            context: context,
            issuedAt: issuedAt,
            lifetime: lifetime
        )
        return try JWSSigner(key: key ?? signer.key).sign(claims: claims)
    }

    func jwks(_ keys: [JWSKey]) throws -> String {
        String(decoding: try JWKSet(keys: keys.map { $0.publicKey() }).publicJSON(), as: UTF8.self)
    }

    /// `{"token": …}` as the upstream's 200 answer.
    func tokenResponse(_ token: String) -> ScriptedUpstream.Action {
        .json(#"{"token":"\#(token)"}"#)
    }
}

/// RSA key generation is the costliest thing these tests do; on a 2-core machine running every test at once it
/// starved the upstream calls of CPU. So the keys are generated once per process and shared.
enum TestKeys {
    static let signer: ServiceAccountKey = {
        do { return try ServiceAccountKey.generate(projectID: "acme-rides", clientEmail: UpstreamFixture.serviceAccount) } catch {
            fatalError("cannot generate a test key: \(error)")
        }
    }()

    private static let spares: [JWSKey] = (0..<2).map { index in
        do { return try JWSKey.generate(.rs256, keyID: "spare-\(index)") } catch { fatalError("cannot generate a test key: \(error)") }
    }

    /// A private key other than the signer's, under `keyID` (`index` picks one of two distinct keys).
    static func other(_ index: Int = 0, keyID: String) throws -> JWSKey {
        try JWSKey.pem(try spares[index].privateKeyPEM(), algorithm: .rs256, keyID: keyID)
    }
}
