import Foundation
import JOSE
import OpenSSLPrimitives
import Testing

/// `mint` and `verify-token --type` for the catalogue beyond trips and vehicles.
@Suite struct CatalogueCLITests {
    static let provider = ["--config", "config.yaml", "--provider", CLIFixtures.providerID]

    static func config() throws -> String {
        """
        providers:
          \(CLIFixtures.providerID):
            backend:
              type: static-key
              wholeFleetTokenLifetime: 15m
              keys:
                trusted-delivery-driver: [{ serviceAccountFile: state/delivery.json, generateIfMissing: true }]
                batch-tasks: [{ serviceAccountFile: state/delivery.json }]
                fleet-reader: [{ serviceAccountFile: state/reader.json, generateIfMissing: true }]
                delivery-fleet-reader: [{ serviceAccountFile: state/reader.json }]
            clients:
              - name: dashboard
                type: api-key
                keySha256: \(CLIFixtures.hex(try Digest.sha256(Array("tg_dashboard_key_not_a_secret".utf8))))
                allow: { fleet-reader: whole-fleet }
        """
    }

    struct Case: Sendable, CustomTestStringConvertible {
        let mint: [String]
        let claim: String
        let lifetime: Int64
        /// A scope the token is not for, and the reason verify-token gives.
        let wrongScope: [String]
        var wrongReason = "wrong_context"
        var testDescription: String { mint.joined(separator: " ") }
    }

    static let cases: [Case] = [
        Case(
            mint: ["--type", "trusted-delivery-driver", "--delivery-vehicle-id", "van-7", "--task-id", "*"],
            claim: #"{"deliveryvehicleid":"van-7","taskid":"*"}"#, lifetime: 3600,
            // A `*` where the scope asked has none is the worst mismatch, and said so.
            wrongScope: ["--type", "trusted-delivery-driver", "--delivery-vehicle-id", "van-7", "--task-id", "task-1"],
            wrongReason: "wildcard_claim"),
        Case(
            mint: ["--task-ids", "task-1,task-2"], claim: #"{"taskids":["task-1","task-2"]}"#, lifetime: 3600,
            wrongScope: ["--task-ids", "task-2,task-1"]),
        Case(
            mint: ["--type", "fleet-reader"], claim: #"{"tripid":"*","vehicleid":"*","taskid":"*","trackingid":"*","deliveryvehicleid":"*"}"#,
            lifetime: 900, wrongScope: ["--type", "delivery-fleet-reader"]),
        Case(
            mint: ["--type", "delivery-fleet-reader"], claim: #"{"taskid":"*","trackingid":"*","deliveryvehicleid":"*"}"#, lifetime: 900,
            wrongScope: ["--type", "fleet-reader"]),
    ]

    @Test(arguments: cases)
    func mintsAndJudgesEachType(_ scenario: Case) async throws {
        try await withCLI { cli in
            try cli.write("config.yaml", try Self.config())
            let minted = try await cli.run(["mint"] + Self.provider + scenario.mint)
            try #require(minted.status == 0, "\(minted)")
            let token = minted.stdout.trimmingCharacters(in: .newlines)
            let claims = try #require(JWTVerifier.decodeUnverified(token).claims)
            #expect(claims["authorization"] == (try JSON.parse(Array(scenario.claim.utf8))))
            #expect((claims["exp"]?.integerValue ?? 0) - (claims["iat"]?.integerValue ?? 0) == scenario.lifetime)

            // Named explicitly, and read from the token itself.
            for scope in [scenario.mint, []] {
                let verdict = try await cli.run(["verify-token", token, "--json"] + Self.provider + scope)
                #expect(verdict.status == 0, "\(verdict)")
                #expect(try CLIFixtures.verdict(verdict)["valid"] == true)
            }
            let wrong = try await cli.run(["verify-token", token, "--json"] + Self.provider + scenario.wrongScope)
            #expect(wrong.status == 1, "\(wrong)")
            #expect(try CLIFixtures.verdict(wrong)["reason"] == .string(scenario.wrongReason))
        }
    }

    @Test func refusesAnEmptyTaskInABatchWithAUsageError() async throws {
        try await withCLI { cli in
            try cli.write("config.yaml", try Self.config())
            let result = try await cli.run(["mint"] + Self.provider + ["--task-ids", "task-1,,task-2"])
            #expect(result.status == 2, "\(result)")
            #expect(result.stderr.contains("an ID in --task-ids is empty"), "\(result)")
        }
    }
}
