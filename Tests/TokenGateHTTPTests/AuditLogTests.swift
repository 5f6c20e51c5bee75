import Foundation
import JOSE
import Testing
import TokenGateCore
import TokenGateTesting

/// The audit log: one JSON line per token a backend issued, none per cache hit, never the token itself.
@Suite(.timeLimit(.minutes(5))) struct AuditLogTests {
    static func lines(_ fixture: GatewayFixture, _ name: String = "audit.jsonl") throws -> [JSONObject] {
        let text = try String(contentsOfFile: "\(fixture.directory.path)/\(name)", encoding: .utf8)
        return try text.split(separator: "\n").map { line in
            try #require(try JSON.parse(Array(line.utf8)).objectValue, "not a JSON object: \(line)")
        }
    }

    @Test func oneLinePerIssuanceNonePerHitAndNoToken() async throws {
        let fixture = try GatewayFixture(audit: "{ path: audit.jsonl }")
        try await fixture.withGateway { gateway in
            let consumer = "/v1/providers/acme-rides/tokens/consumer"
            let first = try await gateway.get("\(consumer)?tripId=trip-1", bearer: GatewayFixture.apiKey)
            #expect(first.status == 200)
            for _ in 0..<3 { #expect(try await gateway.get("\(consumer)?tripId=trip-1", bearer: GatewayFixture.apiKey).status == 200) }
            let session = try fixture.sessionToken(subject: "rider-42", claims: ["trips": .array([.string("trip-2")])])
            let second = try await gateway.get("\(consumer)?tripId=trip-2", bearer: session, headers: [("X-Request-ID", "req-audit-2")])
            #expect(second.status == 200)

            let lines = try Self.lines(fixture)
            #expect(lines.count == 2, "one line per backend issuance, none for the three cache hits")
            let tokens = try [first, second].map { try #require($0.json["token"]?.stringValue) }
            let text = try String(contentsOfFile: "\(fixture.directory.path)/audit.jsonl", encoding: .utf8)
            for token in tokens {
                #expect(!text.contains(token))
                #expect(!text.contains(String(token.split(separator: ".")[2])), "not even the signature")
            }

            let byAPIKey = lines[0]
            #expect(byAPIKey["event"] == .string("token_issued"))
            #expect(byAPIKey["provider"] == .string("acme-rides"))
            #expect(byAPIKey["tokenType"] == .string("consumer"))
            #expect(byAPIKey["context"]?.objectValue?["tripId"] == .string("trip-1"))
            #expect(byAPIKey["caller"]?.objectValue?["client"] == .string("dispatch"))
            #expect(byAPIKey["caller"]?.objectValue?["kind"] == .string("api-key"))
            #expect(byAPIKey["caller"]?.objectValue?["subject"] == nil)
            #expect(byAPIKey["fingerprint"] == .string(TokenFingerprint.of(tokens[0])))
            let parts = tokens[0].split(separator: ".")
            let headerBytes = try #require(Base64URL.decode(parts[0]))
            let claimBytes = try #require(Base64URL.decode(parts[1]))
            let header = try #require(try JSON.parse(headerBytes).objectValue)
            let claims = try #require(try JSON.parse(claimBytes).objectValue)
            #expect(byAPIKey["kid"] != nil)
            #expect(byAPIKey["kid"] == header["kid"])
            #expect(byAPIKey["exp"] == claims["exp"])
            #expect(byAPIKey["iat"] == claims["iat"])
            #expect(byAPIKey["time"]?.stringValue?.hasSuffix("Z") == true)

            let bySession = lines[1]
            #expect(bySession["caller"]?.objectValue?["client"] == .string("rider-app"))
            #expect(bySession["caller"]?.objectValue?["kind"] == .string("session-token"))
            #expect(bySession["caller"]?.objectValue?["subject"] == .string("rider-42"))
            #expect(bySession["requestId"] == .string("req-audit-2"))
            #expect(bySession["fingerprint"] == .string(TokenFingerprint.of(tokens[1])))

            let attributes = try FileManager.default.attributesOfItem(atPath: "\(fixture.directory.path)/audit.jsonl")
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
        }
    }

    @Test func aRotatedFileIsLetGoOnReloadAndANewOneStarted() async throws {
        let fixture = try GatewayFixture(audit: "{ path: audit.jsonl }")
        try await fixture.withGateway { gateway in
            let consumer = "/v1/providers/acme-rides/tokens/consumer"
            #expect(try await gateway.get("\(consumer)?tripId=trip-1", bearer: GatewayFixture.apiKey).status == 200)
            // What logrotate does: move the file away, then signal (here: the reload SIGHUP triggers).
            let directory = fixture.directory.path
            #expect(rename("\(directory)/audit.jsonl", "\(directory)/audit.jsonl.1") == 0)
            try await gateway.reloader.reload(trigger: "SIGHUP")
            #expect(try await gateway.get("\(consumer)?tripId=trip-2", bearer: GatewayFixture.apiKey).status == 200)
            #expect(try Self.lines(fixture, "audit.jsonl.1").map { $0["context"]?.objectValue?["tripId"] } == [.string("trip-1")])
            #expect(try Self.lines(fixture).map { $0["context"]?.objectValue?["tripId"] } == [.string("trip-2")])
        }
    }

    @Test func anAuditFileThatCannotBeOpenedFailsTheReloadAndTheOldOneStays() async throws {
        let fixture = try GatewayFixture(audit: "{ path: audit.jsonl }")
        try await fixture.withGateway { gateway in
            try fixture.rewriteConfig {
                $0.replacingOccurrences(of: "audit: { path: audit.jsonl }", with: "audit: { path: no-such-dir/audit.jsonl }")
            }
            await #expect(throws: AuditLogError.self) { try await gateway.reloader.reload(trigger: "test") }
            #expect(gateway.service.generation.number == 1)
            #expect(try await gateway.get("/v1/providers/acme-rides/tokens/consumer?tripId=trip-1", bearer: GatewayFixture.apiKey).status == 200)
            #expect(try Self.lines(fixture).count == 1)
        }
    }
}
