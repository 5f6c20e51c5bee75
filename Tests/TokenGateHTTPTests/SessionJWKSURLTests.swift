import Foundation
import JOSE
import StaticKeySigner
import Synchronization
import Testing
import TokenGateCore
import TokenGateTesting

/// A `jwksUrl:` client end to end: the identity provider's JWKS is served over real HTTP on loopback (by a second
/// gateway, whose `/v1/providers/<id>/jwks.json` publishes its signing key), fetched by the refresher `serve`
/// runs, and used to verify a rider's session token.
@Suite(.timeLimit(.minutes(5))) struct SessionJWKSURLTests {
    static let issuer = "https://login.acme.test/"
    static let trip = "/v1/providers/acme-rides/tokens/consumer?tripId=trip-42"

    @Test func riderSessionTokenVerifiedWithKeysFetchedOverHTTPGetsAConsumerToken() async throws {
        try await TemporaryDirectory.with { directory in
            let clock = ManualClock()
            let registry = BackendRegistry([StaticKeySignerFactory()])
            let signingKey = try ServiceAccountKey.generate(
                projectID: "acme-login", clientEmail: "login@acme-login.iam.gserviceaccount.com")
            _ = try directory.write("keys/idp.json", signingKey.json())
            let idpConfig = try directory.write("idp.yaml", Self.identityProviderConfiguration)

            try await RunningGateway.with(configuration: idpConfig, registry: registry, clock: clock.gatewayClock) { idp in
                let jwksURL = "\(idp.baseURL)/v1/providers/acme-login/jwks.json"
                let config = try directory.write("gateway.yaml", Self.gatewayConfiguration(jwksURL: jwksURL))
                try await RunningGateway.with(configuration: config, registry: registry, clock: clock.gatewayClock) {
                    gateway in
                    let keySet = try #require(Self.remoteKeySet(of: gateway))
                    #expect(keySet.url.url == jwksURL)
                    try await Self.waitUntilLoaded(keySet)
                    #expect(keySet.current()?.key(withID: signingKey.privateKeyID) != nil)

                    let session = try Self.sessionToken(signedBy: signingKey.key, now: clock.now)
                    let response = try await gateway.get(Self.trip, bearer: session)
                    #expect(response.status == 200, "\(response.text)")
                    let token = try #require(response.json["token"]?.stringValue)
                    let claims = try #require(JWTVerifier.decodeUnverified(token).claims)
                    #expect(claims["authorization"]?.objectValue?["tripid"]?.stringValue == "trip-42")

                    let elsewhere = try await gateway.get(
                        "/v1/providers/acme-rides/tokens/consumer?tripId=trip-7", bearer: session)
                    #expect(elsewhere.status == 403)
                    // A key the identity provider never published is refused.
                    let forged = try Self.sessionToken(
                        signedBy: JWSKey.generate(.rs256, keyID: signingKey.privateKeyID), now: clock.now)
                    #expect(try await gateway.get(Self.trip, bearer: forged).status == 401)
                }
            }
        }
    }

    /// Two tenants (and a backend's verify: list) naming one JWKS URL share one key set and one fetch.
    @Test func oneJWKSURLUsedByTwoTenantsIsFetchedByOneKeySet() async throws {
        try await TemporaryDirectory.with { directory in
            let clock = ManualClock()
            let signingKey = try ServiceAccountKey.generate(projectID: "acme-login", clientEmail: "login@acme-login.iam.gserviceaccount.com")
            let jwks = try JWKSet(keys: [signingKey.key.publicKey()]).publicJSON()
            let fetcher = CountingJWKSFetcher(body: jwks)
            let url = "https://login.acme.test/jwks.json"
            let second = Self.gatewayConfiguration(jwksURL: url)
                .replacingOccurrences(of: "  acme-rides:", with: "  zoom-cabs:")
                .replacingOccurrences(of: "keys/consumer.json", with: "keys/zoom.json")
                .replacingOccurrences(of: "refreshInterval: 10m", with: "refreshInterval: 5m")
                .replacingOccurrences(of: "providers:\n", with: "")
            let config = try directory.write("gateway.yaml", Self.gatewayConfiguration(jwksURL: url) + "\n" + second)
            try await RunningGateway.with(
                configuration: config, registry: BackendRegistry([StaticKeySignerFactory()]), clock: clock.gatewayClock,
                jwksFetcher: fetcher
            ) { gateway in
                let keySets = gateway.service.generation.keySets.keySets
                #expect(keySets.count == 1)
                let keySet = try #require(keySets.values.first)
                try await Self.waitUntilLoaded(keySet)
                // The shortest interval any use asks for.
                #expect(keySet.refreshInterval == .seconds(300))
                let session = try Self.sessionToken(signedBy: signingKey.key, now: clock.now)
                #expect(try await gateway.get(Self.trip, bearer: session).status == 200)
                #expect(try await gateway.get(Self.trip.replacingOccurrences(of: "acme-rides", with: "zoom-cabs"), bearer: session).status == 200)
                #expect(fetcher.count == 1)
                // A reload hands the set on with its keys: nothing is fetched again.
                try await gateway.reloader.reload(trigger: "test")
                #expect(gateway.service.generation.keySets.keySets[url] === keySet)
                #expect(fetcher.count == 1)
            }
        }
    }

    static func remoteKeySet(of gateway: RunningGateway) -> RemoteKeySet? {
        gateway.service.generation.keySets.keySets.values.first
    }

    /// The refresher fetches as the gateway starts; poll its key set with short awaits, a bounded number of times.
    static func waitUntilLoaded(_ keySet: RemoteKeySet) async throws {
        if try await eventually({ keySet.current() != nil }) { return }
        Issue.record("the JWKS never loaded: \(keySet.lastFailure ?? "no fetch finished")")
        throw CancellationError()
    }

    static func sessionToken(signedBy key: JWSKey, now: Int64) throws -> String {
        var claims = JSONObject()
        claims["iss"] = .string(issuer)
        claims["sub"] = "rider-1"
        claims["aud"] = "acme-rider-app"
        claims["iat"] = .integer(now)
        claims["exp"] = .integer(now + 3600)
        claims["trips"] = .array(["trip-42", "trip-43"])
        return try JWSSigner(key: key).sign(claims: claims)
    }

    static let identityProviderConfiguration = """
        providers:
          acme-login:
            backend:
              type: static-key
              keys:
                consumer: [{ serviceAccountFile: keys/idp.json }]
            clients:
              - name: unused
                type: api-key
                keySha256: \(String(repeating: "ab", count: 32))
                allow: { consumer: any }
        """

    static func gatewayConfiguration(jwksURL: String) -> String {
        """
        providers:
          acme-rides:
            backend:
              type: static-key
              keys:
                consumer: [{ serviceAccountFile: keys/consumer.json, generateIfMissing: true }]
            clients:
              - name: rider-app
                type: jwt
                jwksUrl: \(jwksURL)
                refreshInterval: 10m
                issuer: \(issuer)
                audience: acme-rider-app
                allow: { consumer: { claim: trips } }
        """
    }
}

/// Serves one JWKS and counts the fetches.
final class CountingJWKSFetcher: JWKSFetcher {
    let body: [UInt8]
    private let fetches = Mutex(0)

    init(body: [UInt8]) { self.body = body }

    var count: Int { fetches.withLock { $0 } }

    func fetchJWKS(from url: String) async throws -> [UInt8] {
        fetches.withLock { $0 += 1 }
        return body
    }
}
