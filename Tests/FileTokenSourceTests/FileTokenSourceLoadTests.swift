import FileTokenSource
import Foundation
import JOSE
import Logging
import Testing
import TokenGateCore
import TokenGateTesting

@Suite struct FileTokenSourceLoadTests {
    static let trip = TokenContext.trip(.id("trip-42"))

    @Test func servesEveryFiledTokenAsTheGatewayVerifiesIt() async throws {
        let fixture = try Fixture()
        let contexts: [TokenContext] = [
            .trip(.id("trip-42")), .vehicle(.id("vehicle-7")), .deliveryVehicle(.id("van-3")),
            .tracking(.id("track-1")), .task(.id("task-9")), .fleet,
            .trustedDeliveryVehicle(.id("van-3"), task: .all), .trustedDeliveryVehicle(.id("van-3"), task: .one(.id("task-9"))),
            .tasks(try TaskIDList([.id("task-1"), .id("task-2")])), .fleetReader, .deliveryFleetReader,
        ]
        let tokens = try Dictionary(uniqueKeysWithValues: contexts.map { ($0, try Fixture.token($0)) })
        try fixture.write(
            """
            consumer:
              trip-42: \(tokens[.trip(.id("trip-42"))]!)
            driver:
              vehicle-7: \(tokens[.vehicle(.id("vehicle-7"))]!)
            delivery-driver:
              van-3: \(tokens[.deliveryVehicle(.id("van-3"))]!)
            delivery-consumer:
              tracking:
                track-1: \(tokens[.tracking(.id("track-1"))]!)
              task:
                task-9: \(tokens[.task(.id("task-9"))]!)
            server: \(tokens[.fleet]!)
            trusted-delivery-driver:
              van-3:
                "*": \(tokens[.trustedDeliveryVehicle(.id("van-3"), task: .all)]!)
                task-9: \(tokens[.trustedDeliveryVehicle(.id("van-3"), task: .one(.id("task-9")))]!)
            batch-tasks:
              "task-1,task-2": \(tokens[.tasks(try TaskIDList([.id("task-1"), .id("task-2")]))]!)
            fleet-reader: \(tokens[.fleetReader]!)
            delivery-fleet-reader: \(tokens[.deliveryFleetReader]!)
            """
        )
        let source = try await fixture.makeSource()
        #expect(source.tokenTypes == Set(TokenType.allCases))
        #expect(source.tokenCount == contexts.count)
        let verifier = FleetEngineVerifier(keys: try VerificationKeys(fixed: source.verificationKeys), audience: FleetEngineClaims.defaultAudience)
        for context in contexts {
            let issued = try await source.issue(.with(context))
            #expect(issued.compact == tokens[context])
            #expect(issued.keyID == Fixture.account.privateKeyID)
            #expect(issued.expiresAt == Fixture.start + 3600)
            _ = try verifier.verify(issued.compact, for: context, now: fixture.clock.now)
        }
    }

    @Test func readsAJSONTokenFile() async throws {
        let fixture = try Fixture()
        let trips: JSONObject = ["trip-42": .string(try Fixture.token(Self.trip))]
        let document: JSONObject = ["consumer": .object(trips)]
        try fixture.write(String(decoding: JSON.serialize(.object(document)), as: UTF8.self), to: "tokens.json")
        let source = try await fixture.makeSource(Fixture.defaultSection.replacingOccurrences(of: "tokens.yaml", with: "tokens.json"))
        #expect(try await source.issue(.with(Self.trip)).expiresAt == Fixture.start + 3600)
    }

    /// A service-account key file binds its public key to its own `client_email`: tokens in another name are skipped.
    @Test func aServiceAccountFileVerifiesItsOwnAccountsTokensOnly() async throws {
        let fixture = try Fixture()
        try fixture.write(String(decoding: try Fixture.account.json(), as: UTF8.self), to: "signer.json")
        let foreign = FleetEngineClaims.claims(
            serviceAccount: "attacker@evil-project.iam.gserviceaccount.com", audience: FleetEngineClaims.defaultAudience,
            context: .vehicle(.id("vehicle-7")), issuedAt: Fixture.start, lifetime: 600)
        let forged = try JWSSigner(key: Fixture.account.key).sign(claims: foreign)
        try fixture.write("consumer:\n  trip-42: \(try Fixture.token(Self.trip))\ndriver:\n  vehicle-7: \(forged)\n")
        let section = Fixture.defaultSection.replacingOccurrences(
            of: "    - jwksFile: jwks.json\n      serviceAccount: tokens@acme-rides.iam.gserviceaccount.com",
            with: "    - serviceAccountFile: signer.json")
        #expect(section.contains("serviceAccountFile"))
        let source = try await fixture.makeSource(section)
        #expect(source.tokenCount == 1)
        #expect(try await source.issue(.with(Self.trip)).keyID == Fixture.account.privateKeyID)
        #expect(fixture.logs.all.contains { $0.metadata["reason"] == "wrong_issuer" })
    }

    /// Tokens that must never be served, and the reason code each is skipped with.
    enum BadToken: String, CaseIterable, Sendable {
        case signedByAnotherKeyWithTheSameKid = "bad_signature"
        case forAnotherTrip = "wrong_context"
        case wildcard = "wildcard_claim"
        case es256WithTheRSAKeysKid = "alg_not_allowed"
        case unknownKid = "unknown_kid"
        case expiredLongAgo = "expired"
        case expiredWithinTheVerifiersLeeway = "expired "
        case issuerNotBoundToTheKey = "wrong_issuer"
        case notAJWS = "malformed"

        var reason: String { rawValue.trimmingCharacters(in: .whitespaces) }

        func make() throws -> String {
            let trip = FileTokenSourceLoadTests.trip
            let kid = Fixture.account.privateKeyID
            switch self {
            case .signedByAnotherKeyWithTheSameKid: return try Fixture.token(trip, key: try JWSKey.generate(.rs256, keyID: kid))
            case .forAnotherTrip: return try Fixture.token(trip, claimed: .trip(.id("trip-43")))
            case .wildcard: return try Fixture.token(trip, claimed: .fleet)
            case .es256WithTheRSAKeysKid: return try Fixture.token(trip, key: try JWSKey.generate(.es256, keyID: kid))
            case .unknownKid: return try Fixture.token(trip, key: try JWSKey.generate(.rs256, keyID: "other"))
            case .expiredLongAgo: return try Fixture.token(trip, issuedAt: Fixture.start - 3700)
            case .expiredWithinTheVerifiersLeeway: return try Fixture.token(trip, issuedAt: Fixture.start - 3630)
            case .issuerNotBoundToTheKey:
                let claims = FleetEngineClaims.claims(
                    serviceAccount: "intruder@acme-rides.iam.gserviceaccount.com",
                    audience: FleetEngineClaims.defaultAudience,
                    context: trip,
                    issuedAt: Fixture.start,
                    lifetime: 600
                )
                return try JWSSigner(key: Fixture.account.key).sign(claims: claims)
            case .notAJWS: return "not-a-token"
            }
        }
    }

    @Test(arguments: BadToken.allCases)
    func skipsABadTokenWithItsReasonAndLoadsTheRest(_ bad: BadToken) async throws {
        let fixture = try Fixture()
        let badToken = try bad.make()
        let good = try Fixture.token(.vehicle(.id("vehicle-7")))
        try fixture.write("consumer:\n  trip-42: \(badToken)\ndriver:\n  vehicle-7: \(good)\n")
        let source = try await fixture.makeSource()
        #expect(source.tokenCount == 1)
        #expect(source.tokenTypes == [.driver])
        #expect(try await source.issue(.with(.vehicle(.id("vehicle-7")))).compact == good)
        await #expect(throws: TokenGateError(.unknownTokenType, "")) { try await source.issue(.with(Self.trip)) }

        let warnings = fixture.logs.all.filter { $0.level == .warning }
        #expect(warnings.count == 1)
        let warning = try #require(warnings.first)
        #expect(warning.metadata["reason"] == bad.reason)
        #expect(warning.metadata["entry"] == "consumer.trip-42")
        #expect(warning.metadata["location"]?.hasSuffix("tokens.yaml:2:12") == true, "\(warning.metadata)")
        #expect(!fixture.logs.all.contains { $0.text.contains(badToken) || $0.text.contains(good) })
    }

    @Test func skipsATokenFiledUnderAnIDTokenGateRefuses() async throws {
        let fixture = try Fixture()
        let good = try Fixture.token(.vehicle(.id("vehicle-7")))
        try fixture.write("consumer:\n  \"trip/42\": \(try Fixture.token(Self.trip))\ndriver:\n  vehicle-7: \(good)\n")
        let source = try await fixture.makeSource()
        #expect(source.tokenCount == 1)
        #expect(fixture.logs.all.first { $0.level == .warning }?.metadata["reason"] == "invalid_context")
    }

    /// The file's keys are Fleet Engine's IDs: a space, any letter, an emoji, a control in a quoted key; one outside
    /// the rule is skipped naming the rule, its entry escaped in the log line.
    @Test func filesTokensUnderAnyIDFleetEngineTakesAndSkipsOthersNamingTheRule() async throws {
        let fixture = try Fixture()
        let ids = ["p1 space", "caf\u{E9} \u{1F695}", "tab\there"]
        let tokens = try ids.map { try Fixture.token(.trip(.id($0))) }
        let decomposed = try Fixture.token(.trip(.id("caf\u{E9}")))
        try fixture.write(
            """
            consumer:
              "p1 space": \(tokens[0])
              "caf\u{E9} \u{1F695}": \(tokens[1])
              "tab\\there": \(tokens[2])
              "cafe\u{301}\\nforged": \(decomposed)
            """)
        let source = try await fixture.makeSource()
        #expect(source.tokenCount == 3)
        for (id, token) in zip(ids, tokens) { #expect(try await source.issue(.with(.trip(.id(id)))).compact == token) }
        let warning = try #require(fixture.logs.all.first { $0.level == .warning })
        #expect(warning.metadata["reason"] == "invalid_context")
        #expect(warning.metadata["detail"] == "not a Fleet Engine ID: it is not in Unicode Normalization Form C")
        // The combining mark is shown (it is a letter's accent); the line feed could forge a line, and is escaped.
        #expect(warning.metadata["entry"] == "consumer.cafe\u{301}\\u{A}forged", "\(warning.metadata)")
    }

    /// A file that holds tokens none of which can be served is an error, not an empty source that looks loaded.
    @Test func aFileNoneOfWhoseTokensVerifiesIsRefused() async throws {
        let fixture = try Fixture()
        let foreign = try Fixture.token(Self.trip, key: try JWSKey.generate(.rs256, keyID: Fixture.account.privateKeyID))
        try fixture.write("consumer:\n  trip-42: \(foreign)\n")
        let message = await fixture.loadError()
        #expect(message.contains("config.yaml:3:9: backend.path: none of the 1 tokens in the file can be served; the first, at "), "\(message)")
        #expect(message.contains("was skipped: bad_signature"), "\(message)")
        #expect(!message.contains(foreign))
    }

    @Test func neverServesATokenPastItsExpiry() async throws {
        let fixture = try Fixture()
        try fixture.write("consumer:\n  trip-42: \(try Fixture.token(Self.trip, lifetime: 600))\n")
        let source = try await fixture.makeSource()
        fixture.clock.advance(to: Fixture.start + 599)
        #expect(try await source.issue(.with(Self.trip)).expiresAt == Fixture.start + 600)
        for now in [Fixture.start + 600, Fixture.start + 630, Fixture.start + 5000] {
            fixture.clock.advance(to: now)
            await #expect(throws: TokenGateError(.noTokenForContext, "")) { try await source.issue(.with(Self.trip)) }
        }
    }

    @Test func refusesContextsTheFileDoesNotHold() async throws {
        let fixture = try Fixture()
        try fixture.write("consumer:\n  trip-42: \(try Fixture.token(Self.trip))\n")
        let source = try await fixture.makeSource()
        let error = await #expect(throws: TokenGateError.self) { try await source.issue(.with(.trip(.id("trip-43")))) }
        #expect(error?.code == .noTokenForContext)
        #expect(error?.reason == "no pre-issued token for consumer tripId=trip-43")
        await #expect(throws: TokenGateError(.unknownTokenType, "")) { try await source.issue(.with(.vehicle(.id("v-1")))) }
    }

    @Test func issuesSafelyFromManyTasksWhileReloading() async throws {
        let fixture = try Fixture()
        let token = try Fixture.token(Self.trip)
        try fixture.write("consumer:\n  trip-42: \(token)\n")
        let source = try await fixture.makeSource()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<16 {
                group.addTask {
                    if index % 4 == 0 {
                        try fixture.write("consumer:\n  trip-42: \(token)\n# \(index)\n", atomically: true)
                        _ = source.reloadIfChanged()
                    }
                    #expect(try await source.issue(.with(Self.trip)).compact == token)
                }
            }
            try await group.waitForAll()
        }
    }
}
