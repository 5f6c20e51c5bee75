import AsyncHTTPClient
import Foundation
import JOSE
import Logging
import OpenSSLPrimitives
import Testing
import TokenGateCore
import TokenGateHTTP
import TokenGateOutbound
import TokenGateTesting

/// Reloading a running gateway: a generation is built beside the running one and swapped whole, keeping what did
/// not change; a broken file changes nothing.
///
/// The limit guards against a hang, not for speed: the under-load test takes 8 s alone, and 80 to 200 s in the whole
/// suite on a 2-core machine, where its 500 requests and 6 reloads share two cooperative threads with the tests
/// running beside it (CI passed 2 minutes once with the fast path off).
@Suite(.timeLimit(.minutes(5))) struct ReloadTests {
    static func path(_ trip: Int) -> String { "/v1/providers/acme-rides/tokens/consumer?tripId=trip-\(trip)" }

    /// A bounded loop of requests on loopback while the test swaps generations several times: no request fails,
    /// every token verifies, and the cached tokens survive the reloads (no mint storm).
    @Test func reloadsUnderLoadFailNoRequestAndKeepTheCachedTokens() async throws {
        let fixture = try GatewayFixture()
        try await fixture.withGateway { gateway in
            var before: [Int: String] = [:]
            for trip in 0..<20 {
                let response = try await gateway.get(Self.path(trip), bearer: GatewayFixture.apiKey)
                #expect(response.status == 200)
                before[trip] = response.json["token"]?.stringValue
            }
            let mintsBefore = fixture.probe.calls
            let (statuses, tokens) = try await withThrowingTaskGroup(of: [(Int, Int, String?)].self) { group in
                for worker in 0..<8 {
                    group.addTask {
                        var seen: [(Int, Int, String?)] = []
                        for round in 0..<60 {
                            let trip = (worker * 7 + round) % 20
                            let response = try await gateway.get(Self.path(trip), bearer: GatewayFixture.apiKey)
                            seen.append((trip, response.status, response.json["token"]?.stringValue))
                        }
                        return seen
                    }
                }
                // Meanwhile: no-op reloads, a new client for acme-rides, new limits for the other tenant.
                for step in 0..<6 {
                    if step == 2 {
                        try fixture.rewriteConfig {
                            $0.replacingOccurrences(
                                of: "      - { name: retired,",
                                with:
                                    "      - { name: added-later, type: api-key, keySha256: \(String(repeating: "ab", count: 32)), allow: { consumer: any } }\n      - { name: retired,"
                            )
                        }
                    }
                    if step == 4 {
                        try fixture.rewriteConfig {
                            $0.replacingOccurrences(
                                of: "  other-fleet:\n", with: "  other-fleet:\n    rateLimits: { provider: { rate: 100/s, burst: 10 } }\n")
                        }
                    }
                    try await gateway.reloader.reload(trigger: "test \(step)")
                    await Task.yield()
                }
                var statuses: [Int] = []
                var tokens: [Int: Set<String>] = [:]
                for try await seen in group {
                    for (trip, status, token) in seen {
                        statuses.append(status)
                        if let token { tokens[trip, default: []].insert(token) }
                    }
                }
                return (statuses, tokens)
            }
            #expect(gateway.service.generation.number == 7)
            #expect(statuses.count == 480)
            #expect(statuses.allSatisfy { $0 == 200 })
            // The same cached token per trip before, during and after: the reloads minted nothing.
            for trip in 0..<20 { #expect(tokens[trip] == [before[trip]!]) }
            #expect(fixture.probe.calls == mintsBefore)
            for trip in 0..<20 {
                let token = try #require(before[trip])
                _ = try await TokenEndpointTests.verify(
                    token, for: .trip(ContextID("trip-\(trip)")!), gateway: gateway, fixture: fixture, now: fixture.clock.now)
            }
        }
    }

    /// A reload that adds a provider serves it as soon as the swap is done.
    @Test func aReloadThatAddsAProviderServesItAtOnce() async throws {
        let fixture = try GatewayFixture()
        try await fixture.withGateway { gateway in
            let path = "/v1/providers/new-fleet/tokens/consumer?tripId=trip-1"
            #expect(try await gateway.get(path, bearer: GatewayFixture.apiKey).status == 404)
            try fixture.rewriteConfig {
                $0 + """

                      new-fleet:
                        backend:
                          type: static-key
                          keys:
                            consumer: [{ serviceAccountFile: keys/new.json, generateIfMissing: true }]
                        clients:
                          - { name: new-dispatch, type: api-key, keySha256: \(Self.digest(GatewayFixture.apiKey)), allow: { consumer: any } }
                    """
            }
            let generation = try await gateway.reloader.reload(trigger: "test")
            #expect(generation.number == 2)
            let served = try await gateway.get(path, bearer: GatewayFixture.apiKey)
            #expect(served.status == 200, "\(served.text)")
            let ready = try await RunningGateway.Endpoint(baseURL: gateway.adminURL).get("/readyz")
            #expect(ready.json["generation"] == .integer(2))
            #expect(ready.json["configSha256"] == .string(HexBytes.encode(try Digest.sha256(Array(try fixture.configText().utf8)))))
        }
    }

    /// A reload that changes a provider's response shape answers in the new shape at once, with the token it had
    /// cached: bodies are written per request from the generation's layout, so no token is minted again for it.
    @Test func aReloadThatChangesTheResponseShapeServesTheCachedTokenInTheNewShape() async throws {
        let fixture = try GatewayFixture()
        try await fixture.withGateway { gateway in
            let first = try await gateway.get(Self.path(1), bearer: GatewayFixture.apiKey)
            let token = try #require(first.json["token"]?.stringValue)
            let expiresAt = try #require(first.json["expiresAt"]?.integerValue)
            let mints = fixture.probe.calls
            try fixture.rewriteConfig {
                $0.replacingOccurrences(
                    of: "    compatibility: google-samples\n",
                    with:
                        "    compatibility: google-samples\n    response: { tokenKey: jwt, expiryKey: expirationTimestamp, expiryFormat: epoch-milliseconds }\n"
                )
            }
            #expect(try await gateway.reloader.reload(trigger: "test").number == 2)
            let second = try await gateway.get(Self.path(1), bearer: GatewayFixture.apiKey)
            #expect(second.status == 200, "\(second.text)")
            #expect(second.json["jwt"] == .string(token))
            #expect(second.json["expirationTimestamp"] == .integer(expiresAt * 1000))
            #expect(second.json["token"] == .string(token))  // the standard fields follow the mapped ones
            #expect(fixture.probe.calls == mints)
        }
    }

    static func digest(_ key: String) -> String { HexBytes.encode((try? Digest.sha256(Array(key.utf8))) ?? []) }

    /// Every broken shape leaves the running generation serving, untouched, and logs the located reason.
    @Test(
        arguments: [
            ("a syntax error", "providers:\n  acme-rides: [\n", "config.yaml:"),
            ("a value of the wrong type", nil, "providers.acme-rides.cache.maxEntries: expected an integer"),
            ("a missing key file", nil, "serviceAccountFile: no such file"),
            ("a key file others may read", nil, "is accessible to others (mode 644)"),
            ("a half-written file", nil, "config.yaml:"),
        ] as [(String, String?, String)])
    func aBrokenConfigurationKeepsTheRunningGeneration(_ shape: String, _ replacement: String?, _ reason: String) async throws {
        let fixture = try GatewayFixture()
        let logs = LogRecorder()
        try await fixture.withGateway(logs: logs) { gateway in
            let first = try await gateway.get(Self.path(1), bearer: GatewayFixture.apiKey)
            #expect(first.status == 200)
            let original = try fixture.configText()
            if shape == "a key file others may read" {
                let loose = try ServiceAccountKey.generate(projectID: "acme-rides", clientEmail: "loose@acme-rides.iam.gserviceaccount.com")
                let path = try fixture.directory.write("keys/loose.json", try loose.json())
                try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: path)
            }
            try fixture.rewriteConfig { text in
                if let replacement { return replacement }
                switch shape {
                case "a value of the wrong type": return text.replacingOccurrences(of: "maxEntries: 1000", with: "maxEntries: lots")
                case "a missing key file":
                    return text.replacingOccurrences(
                        of: "consumer: [{ serviceAccountFile: keys/consumer.json, generateIfMissing: true }]",
                        with: "consumer: [{ serviceAccountFile: keys/missing.json }]")
                case "a key file others may read":
                    return text.replacingOccurrences(
                        of: "consumer: [{ serviceAccountFile: keys/consumer.json, generateIfMissing: true }]",
                        with: "consumer: [{ serviceAccountFile: keys/loose.json }]")
                default: return String(text.prefix(text.count / 2))
                }
            }
            await #expect(throws: ConfigError.self) { try await gateway.reloader.reload(trigger: "test") }
            #expect(gateway.service.generation.number == 1)
            let again = try await gateway.get(Self.path(1), bearer: GatewayFixture.apiKey)
            #expect(again.status == 200)
            #expect(again.json["token"] == first.json["token"])
            let line = try #require(logs.all.first { $0.text.contains("configuration not reloaded") })
            #expect(line.level == .error)
            #expect(line.text.contains(reason), "\(line.text)")
            // Mended, the next reload takes.
            try fixture.rewriteConfig { _ in original }
            #expect(try await gateway.reloader.reload(trigger: "test").number == 2)
        }
    }

    /// The signing key file is removed, or overwritten with garbage, under a running gateway: the key in memory
    /// keeps minting new contexts, and the reload that would read the file fails loudly and changes nothing.
    @Test(arguments: ["removed", "garbage"])
    func aSigningKeyFileLostWhileRunningKeepsTheOldKeyMintingAndFailsTheReload(_ fault: String) async throws {
        let fixture = try GatewayFixture()
        let logs = LogRecorder()
        try await fixture.withGateway(logs: logs) { gateway in
            // First without generateIfMissing, as in production, so a lost file is not silently replaced.
            try fixture.rewriteConfig {
                $0.replacingOccurrences(
                    of: "consumer: [{ serviceAccountFile: keys/consumer.json, generateIfMissing: true }]",
                    with: "consumer: [{ serviceAccountFile: keys/consumer.json }]")
            }
            #expect(try await gateway.reloader.reload(trigger: "test").number == 2)
            let before = try #require(try await gateway.get(Self.path(1), bearer: GatewayFixture.apiKey).json["token"]?.stringValue)
            let kid = try #require(JWTVerifier.decodeUnverified(before).header?["kid"])
            let keyFile = "\(fixture.directory.path)/keys/consumer.json"
            if fault == "removed" {
                try FileManager.default.removeItem(atPath: keyFile)
            } else {
                try fixture.directory.write("keys/consumer.json", "{ this is not a service account key")
            }
            let minted = try #require(try await gateway.get(Self.path(2), bearer: GatewayFixture.apiKey).json["token"]?.stringValue)
            #expect(JWTVerifier.decodeUnverified(minted).header?["kid"] == kid)
            await #expect(throws: ConfigError.self) { try await gateway.reloader.reload(trigger: "SIGHUP") }
            #expect(gateway.service.generation.number == 2)
            let line = try #require(logs.all.first { $0.text.contains("configuration not reloaded") })
            #expect(line.level == .error)
            #expect(line.text.contains("keys.consumer[0].serviceAccountFile"), "\(line.text)")
            let after = try #require(try await gateway.get(Self.path(3), bearer: GatewayFixture.apiKey).json["token"]?.stringValue)
            #expect(JWTVerifier.decodeUnverified(after).header?["kid"] == kid)
        }
    }

    /// A provider whose signing key changed mints with the new key from the swap on, and never serves a cached
    /// token signed by a key it no longer publishes.
    @Test func aRotatedSigningKeyMintsFromTheSwapOn() async throws {
        let fixture = try GatewayFixture()
        try await fixture.withGateway { gateway in
            let old = try await gateway.get(Self.path(1), bearer: GatewayFixture.apiKey)
            let oldToken = try #require(old.json["token"]?.stringValue)
            let oldKid = try #require(JWTVerifier.decodeUnverified(oldToken).header?["kid"])
            let rotated = try ServiceAccountKey.generate(
                projectID: "acme-rides", clientEmail: "tokengate-consumer@acme-rides.iam.gserviceaccount.com")
            try fixture.directory.write("keys/rotated.json", try rotated.json())
            try fixture.rewriteConfig {
                $0.replacingOccurrences(of: "keys/consumer.json, generateIfMissing: true", with: "keys/rotated.json")
            }
            try await gateway.reloader.reload(trigger: "test")
            let new = try await gateway.get(Self.path(1), bearer: GatewayFixture.apiKey)
            #expect(new.status == 200)
            let token = try #require(new.json["token"]?.stringValue)
            #expect(JWTVerifier.decodeUnverified(token).header?["kid"] == .string(rotated.privateKeyID))
            let jwks = try await gateway.get("/v1/providers/acme-rides/jwks.json")
            #expect(!jwks.text.contains(oldKid.stringValue ?? "-"))
            #expect(jwks.text.contains(rotated.privateKeyID))
            // The other tenant kept its cache: unchanged settings, nothing minted for it.
            let other = "/v1/providers/other-fleet/tokens/consumer?tripId=trip-1"
            let calls = fixture.probe.calls
            _ = try await gateway.get(other, bearer: GatewayFixture.otherTenantKey)
            _ = try await gateway.get(other, bearer: GatewayFixture.otherTenantKey)
            #expect(fixture.probe.calls == calls + 1)
        }
    }

    /// With a watch, a change to config.yaml is picked up without a signal.
    @Test func aWatchedConfigurationReloadsByItself() async throws {
        let fixture = try GatewayFixture()
        try await fixture.withGateway(watchInterval: .milliseconds(50)) { gateway in
            try fixture.rewriteConfig { $0.replacingOccurrences(of: "maxEntries: 1000", with: "maxEntries: 2000") }
            #expect(try await eventually { gateway.service.generation.number == 2 })
            #expect(gateway.service.generation.configuration.providers[ProviderID("acme-rides")!]?.cache.maxEntries == 2000)
        }
    }

    /// A change made after the generation was built but before the watch first looks is a change too: the service
    /// group starts the watch some time after the gateway is up (under load, after this test's rewrite: CI).
    @Test func aChangeBeforeTheWatchFirstLooksIsSeen() async throws {
        let fixture = try GatewayFixture()
        // The reloader's own account of what it did, shown if the reload is not seen.
        let logs = LogRecorder()
        let logger = logs.logger
        let assembler = GatewayAssembler(
            registry: fixture.registry, environment: [:], clock: fixture.clock.gatewayClock, logger: logger,
            jwksFetcher: HTTPJWKSFetcher(client: HTTPClient.shared))
        let service = TokenService(generation: try await assembler.build(path: fixture.configPath), clock: fixture.clock.gatewayClock, logger: logger)
        let reloader = GatewayReloader(
            service: service, assembler: assembler, configurationPath: fixture.configPath, watchInterval: .milliseconds(50), logger: logger)
        try fixture.rewriteConfig { $0.replacingOccurrences(of: "maxEntries: 1000", with: "maxEntries: 2000") }
        let watching = Task { try await reloader.run() }
        defer { watching.cancel() }
        #expect(try await eventually { service.generation.number == 2 }, "\(logs.all.map(\.text))")
        #expect(service.generation.configuration.providers[ProviderID("acme-rides")!]?.cache.maxEntries == 2000)
    }
}
