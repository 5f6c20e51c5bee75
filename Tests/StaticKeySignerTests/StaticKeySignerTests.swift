import Foundation
import JOSE
import Logging
import StaticKeySigner
import Testing
import TokenGateCore
import TokenGateTesting

@Suite struct StaticKeySignerTests {
    static let now: Int64 = 1_800_000_000
    static let clock = TokenGateClock(wallSeconds: { now }, monotonicNanoseconds: { 0 })

    /// Loads `yaml` (written as config.yaml in a fresh directory) with the static-key plugin.
    static func load(_ yaml: String, files: [String: [UInt8]] = [:]) async throws -> (GatewayGeneration, String) {
        let directory = try TemporaryDirectory(prefix: "tg").path
        for (name, bytes) in files {
            _ = FileManager.default.createFile(atPath: "\(directory)/\(name)", contents: Data(bytes), attributes: [.posixPermissions: 0o600])
        }
        let path = "\(directory)/config.yaml"
        _ = FileManager.default.createFile(atPath: path, contents: Data(yaml.utf8))
        let assembler = GatewayAssembler(
            registry: BackendRegistry([StaticKeySignerFactory()]),
            environment: [:],
            clock: clock,
            logger: Logger(label: "test"),
            jwksFetcher: NoNetwork()
        )
        return (try await assembler.build(path: path), directory)
    }

    static func config(keys: String, lifetime: String = "1h") -> String {
        """
        providers:
          acme-rides:
            backend:
              type: static-key
              tokenLifetime: \(lifetime)
              keys:
        \(keys)
            clients:
              - name: backend
                type: api-key
                keySha256: 9ae4a3e2a48a06ab46007841990560acb1408babd4b1965ebe237cfec90382b6
                allow: { consumer: any }
        """
    }

    static let generatedConsumerKey = """
                consumer:
                  - serviceAccountFile: state/consumer.json
                    generateIfMissing: true
        """

    @Test func generatesAPrivateKeyFileOnlyItsOwnerCanRead() async throws {
        let (_, directory) = try await Self.load(Self.config(keys: Self.generatedConsumerKey))
        let attributes = try FileManager.default.attributesOfItem(atPath: "\(directory)/state/consumer.json")
        #expect((attributes[.posixPermissions] as? Int) == 0o600)
        let account = try ServiceAccountKey(json: [UInt8](try Data(contentsOf: URL(fileURLWithPath: "\(directory)/state/consumer.json"))))
        #expect(account.clientEmail == "tokengate-consumer@acme-rides.iam.gserviceaccount.com")
    }

    @Test func mintsATokenTheGatewayVerifierAccepts() async throws {
        let (loaded, _) = try await Self.load(Self.config(keys: Self.generatedConsumerKey, lifetime: "30m"))
        let provider = try #require(loaded.providers[ProviderID("acme-rides")!])
        let trip = TokenContext.trip(ContextID("trip-42")!)
        let issued = try await provider.backend.issue(TokenRequest(provider: provider.id, context: trip))
        #expect(issued.expiresAt == Self.now + 1800)
        let verifier = FleetEngineVerifier(
            keys: try provider.verificationKeys(),
            audience: FleetEngineClaims.defaultAudience,
            minRemaining: 300
        )
        let verified = try verifier.verify(issued.compact, for: trip, now: Self.now)
        #expect(verified.algorithm == .rs256)
        #expect(verified.keyID == issued.keyID)
        #expect(verified.claims["iat"] == .integer(Self.now))
        #expect(verified.claims["iss"] == .string("tokengate-consumer@acme-rides.iam.gserviceaccount.com"))
        #expect(throws: TokenRejection(.wrongContext, "")) {
            try verifier.verify(issued.compact, for: .trip(ContextID("trip-43")!), now: Self.now)
        }
        #expect(throws: TokenRejection(.insufficientLifetime, "")) {
            try verifier.verify(issued.compact, for: trip, now: Self.now + 1600)
        }
    }

    @Test func refusesTypesWithoutAKey() async throws {
        let (loaded, _) = try await Self.load(Self.config(keys: Self.generatedConsumerKey))
        let backend = try #require(loaded.providers.values.first?.backend)
        #expect(backend.tokenTypes == [.consumer])
        await #expect(throws: TokenGateError(.unknownTokenType, "")) {
            try await backend.issue(TokenRequest(provider: ProviderID("acme-rides")!, context: .vehicle(ContextID("v1")!)))
        }
    }

    @Test func signsWithTheFirstKeyAndPublishesAllForRotation() async throws {
        let old = try ServiceAccountKey.generate(projectID: "acme-rides", clientEmail: "old@acme-rides.iam.gserviceaccount.com")
        let new = try ServiceAccountKey.generate(projectID: "acme-rides", clientEmail: "new@acme-rides.iam.gserviceaccount.com")
        let keys = """
                    consumer:
                      - serviceAccountFile: new.json
                      - serviceAccountFile: old.json
                    driver:
                      - serviceAccountFile: new.json
            """
        let (loaded, _) = try await Self.load(Self.config(keys: keys), files: ["new.json": try new.json(), "old.json": try old.json()])
        let provider = try #require(loaded.providers.values.first)
        let issued = try await provider.backend.issue(TokenRequest(provider: ProviderID("acme-rides")!, context: .trip(ContextID("t")!)))
        #expect(issued.keyID == new.privateKeyID)
        let published = try provider.verificationKeys()
        #expect(published.keySet.keys.count == 2)
        #expect(published.keySet.key(withID: old.privateKeyID) != nil)
        #expect(published.issuers[old.privateKeyID] == "old@acme-rides.iam.gserviceaccount.com")
        #expect(published.keySet.keys.allSatisfy { !$0.isPrivate })
    }

    @Test func acceptsAPEMKeyWithItsKidAndServiceAccount() async throws {
        let key = try JWSKey.generate(.rs256)
        let keys = """
                    driver:
                      - privateKeyFile: driver.pem
                        keyId: driver-key-1
                        clientEmail: driver@acme-rides.iam.gserviceaccount.com
            """
        let (loaded, _) = try await Self.load(Self.config(keys: keys), files: ["driver.pem": Array(try key.privateKeyPEM().utf8)])
        let backend = try #require(loaded.providers.values.first?.backend)
        let issued = try await backend.issue(TokenRequest(provider: ProviderID("acme-rides")!, context: .vehicle(ContextID("v-7")!)))
        #expect(issued.keyID == "driver-key-1")
    }

    @Test func issuesSafelyFromManyTasksAtOnce() async throws {
        let (loaded, _) = try await Self.load(Self.config(keys: Self.generatedConsumerKey))
        let provider = try #require(loaded.providers.values.first)
        let backend = provider.backend
        let keys = try provider.verificationKeys()
        let verifier = FleetEngineVerifier(keys: keys, audience: FleetEngineClaims.defaultAudience)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<16 {
                group.addTask {
                    let trip = TokenContext.trip(ContextID("trip-\(index)")!)
                    let issued = try await backend.issue(TokenRequest(provider: ProviderID("acme-rides")!, context: trip))
                    _ = try verifier.verify(issued.compact, for: trip, now: Self.now)
                }
            }
            try await group.waitForAll()
        }
    }

    static func loadError(_ yaml: String, files: [String: [UInt8]] = [:]) async -> String {
        do {
            _ = try await load(yaml, files: files)
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    @Test func namesFileLineColumnAndKeyForAMissingKeyFile() async {
        let message = await Self.loadError(Self.config(keys: "        consumer:\n          - serviceAccountFile: keys/missing.json"))
        #expect(message.contains("/config.yaml:8:33: providers.acme-rides.backend.keys.consumer[0].serviceAccountFile: no such file: "), "\(message)")
    }

    @Test func aKeysExpiryDateIsReadForKeyHealthAndAMalformedOneIsLocated() async throws {
        let account = try ServiceAccountKey.generate(projectID: "acme-rides", clientEmail: "c@acme-rides.iam.gserviceaccount.com")
        let files = ["sa.json": try account.json()]
        let (generation, _) = try await Self.load(
            Self.config(keys: "        consumer:\n          - { serviceAccountFile: sa.json, expires: 2027-03-01T12:00:00Z }"), files: files)
        let backend = try #require(generation.providers[ProviderID("acme-rides")!]?.backend)
        #expect(backend.signingKeys == [SigningKey(keyID: account.privateKeyID, serviceAccount: account.clientEmail, expiresAt: 1_803_902_400)])
        let message = await Self.loadError(
            Self.config(keys: "        consumer:\n          - { serviceAccountFile: sa.json, expires: 2027-02-30 }"), files: files)
        #expect(
            message.hasSuffix(
                "/config.yaml:8:53: providers.acme-rides.backend.keys.consumer[0].expires: expected a date such as 2027-01-15 or "
                    + "2027-01-15T10:23:00Z (UTC), got '2027-02-30'"), "\(message)")
    }

    /// As ssh refuses a private key others may read, so does the signer, unless told otherwise (and then warns).
    @Test func refusesAKeyFileOthersMayRead() async throws {
        let account = try ServiceAccountKey.generate(projectID: "acme-rides", clientEmail: "c@acme-rides.iam.gserviceaccount.com")
        let (_, directory) = try await Self.load(
            Self.config(keys: "        consumer:\n          - serviceAccountFile: sa.json"), files: ["sa.json": try account.json()])
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: "\(directory)/sa.json")
        let path = "\(directory)/config.yaml"
        let assembler = GatewayAssembler(
            registry: BackendRegistry([StaticKeySignerFactory()]), environment: [:], clock: Self.clock, logger: Logger(label: "test"),
            jwksFetcher: NoNetwork())
        let error = await #expect(throws: ConfigError.self) { try await assembler.build(path: path) }
        #expect(
            error?.description.contains("config.yaml:8:33: providers.acme-rides.backend.keys.consumer[0].serviceAccountFile: the private key file")
                == true)
        #expect(error?.message.contains("is accessible to others (mode 644); chmod 600 it") == true, "\(String(describing: error))")
        // Explicitly allowed: it loads, and the check says why it should not have been.
        let lenient = try String(contentsOfFile: path, encoding: .utf8).replacingOccurrences(
            of: "      type: static-key\n", with: "      type: static-key\n      allowInsecureKeyFilePermissions: true\n")
        _ = FileManager.default.createFile(atPath: path, contents: Data(lenient.utf8))
        let check = await assembler.check(path: path)
        #expect(check.errors.isEmpty)
        #expect(check.warnings.contains { $0.message.contains("is accessible to others") })
    }

    @Test func refusesLifetimesOverAnHour() async {
        let message = await Self.loadError(Self.config(keys: Self.generatedConsumerKey, lifetime: "2h"))
        #expect(message.contains("config.yaml:5:22: providers.acme-rides.backend.tokenLifetime: must be between 1m and 1h"), "\(message)")
    }

    static let generatedConsumerAndDriverKeys =
        generatedConsumerKey + """

                    driver:
                      - serviceAccountFile: state/driver.json
                        generateIfMissing: true
            """

    /// Rider tokens short, driver tokens an hour, fleet readers the whole-fleet default.
    @Test func eachTokenTypeLivesAsLongAsItsLifetimeSays() async throws {
        let (loaded, _) = try await Self.load(
            Self.config(keys: Self.generatedConsumerAndDriverKeys, lifetime: "{ default: 1h, consumer: 15m }"))
        let provider = try #require(loaded.providers[ProviderID("acme-rides")!])
        let consumer = try await provider.backend.issue(TokenRequest(provider: provider.id, context: .trip(ContextID("trip-1")!)))
        #expect(consumer.expiresAt == Self.now + 900)
        let driver = try await provider.backend.issue(TokenRequest(provider: provider.id, context: .vehicle(ContextID("v-1")!)))
        #expect(driver.expiresAt == Self.now + 3600)
        #expect(provider.backend.summary.hasPrefix("lifetime 1h (consumer 15m); "), "\(provider.backend.summary)")
    }

    @Test(arguments: [
        ("{ default: 1h, taxi: 5m }", "tokenLifetime.taxi: expected default or a token type: consumer, "),
        ("{ vehicle: 5m }", "tokenLifetime.vehicle: expected default or a token type"),
        ("{ driver: 5m }", "tokenLifetime.driver: this backend issues no driver tokens; it issues consumer"),
        ("{ consumer: 2h }", "tokenLifetime.consumer: must be between 1m and 1h"),
        ("{ default: 30s }", "tokenLifetime.default: must be between 1m and 1h"),
        // The cache serves a token only with more than minRemaining (5m by default) left.
        ("{ default: 1h, consumer: 5m }", "tokenLifetime: consumer tokens would live 5m, no longer than cache.minRemaining (5m)"),
    ])
    func refusesPerTypeLifetimesThatCannotApply(lifetime: String, expected: String) async {
        let message = await Self.loadError(Self.config(keys: Self.generatedConsumerKey, lifetime: lifetime))
        #expect(message.contains("providers.acme-rides.backend." + expected), "\(message)")
    }

    @Test func refusesKeysFleetEngineCannotUse() async throws {
        let ec = try JWSKey.generate(.es256)
        let keys = "        consumer:\n          - privateKeyFile: ec.pem\n            keyId: k\n            clientEmail: e@x"
        let message = await Self.loadError(Self.config(keys: keys), files: ["ec.pem": Array(try ec.privateKeyPEM().utf8)])
        #expect(message.contains("providers.acme-rides.backend.keys.consumer[0].privateKeyFile: not a usable RS256 private key"), "\(message)")
        let garbage = await Self.loadError(
            Self.config(keys: "        consumer:\n          - serviceAccountFile: sa.json"), files: ["sa.json": Array("{}".utf8)])
        #expect(garbage.contains("serviceAccountFile: not a usable service-account key file"), "\(garbage)")
    }

    @Test func refusesUnknownKeysAndTypes() async {
        let typo = await Self.loadError(Self.config(keys: "        consumer:\n          - serviceAcountFile: sa.json"))
        #expect(typo.contains("/config.yaml:8:13: providers.acme-rides.backend.keys.consumer[0].serviceAcountFile: unknown key"), "\(typo)")
        let type = await Self.loadError(Self.config(keys: "        taxi:\n          - serviceAccountFile: sa.json"))
        #expect(type.contains("providers.acme-rides.backend.keys.taxi: unknown token type"), "\(type)")
    }
}

/// The signer never goes to the network: a fetch would be a bug.
struct NoNetwork: JWKSFetcher {
    func fetchJWKS(from url: String) async throws -> [UInt8] { throw CancellationError() }
}
