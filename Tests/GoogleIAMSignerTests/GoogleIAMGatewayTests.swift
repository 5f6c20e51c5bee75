import Foundation
import JOSE
import Testing
import TokenGateCore
import TokenGateTesting

/// The `google-iam` backend through the real gateway, against stand-ins for Google's metadata server, OAuth token
/// endpoint, IAM Credentials API and public-key endpoint (the stand-ins are checked against Google's own
/// `google-auth` library in Tests/Peers/google).
@Suite(.timeLimit(.minutes(5))) struct GoogleIAMGatewayTests {
    @Test(arguments: ["credentialsFile", "GOOGLE_APPLICATION_CREDENTIALS", "gcloud", "metadata"])
    func eachCredentialsSourceMintsATokenThatVerifiesWithTheAccountsPublishedKeys(source: String) async throws {
        let user = "ops@acme.example"
        let both = [IAMFixture.consumer, IAMFixture.driver]
        try await IAMFixture.run(grants: [IAMFixture.runtime: both, user: both, IAMFixture.metadataAccount: both]) { fixture in
            let keyFile = try await fixture.runtimeKeyFile()
            var environment = try fixture.environment()
            var credentialsFile: String?
            let principal: String
            switch source {
            case "credentialsFile":
                credentialsFile = keyFile
                principal = IAMFixture.runtime
            case "GOOGLE_APPLICATION_CREDENTIALS":
                environment["GOOGLE_APPLICATION_CREDENTIALS"] = keyFile
                principal = IAMFixture.runtime
            case "gcloud":
                // What `gcloud auth application-default login` leaves: a user's refresh token.
                let state = try await fixture.standIn.control(
                    #"{"authorizedUsers": [{"clientId": "c1", "clientSecret": "s1", "refreshToken": "r1", "email": "\#(user)", "exportFile": true}]}"#
                )
                let userFile = try #require(state["authorizedUsers"]?.objectValue?["c1"]?.objectValue?["file"]?.stringValue)
                let gcloud = try fixture.directory.makeDirectory("gcloud")
                try FileManager.default.copyItem(atPath: userFile, toPath: "\(gcloud)/application_default_credentials.json")
                environment["CLOUDSDK_CONFIG"] = gcloud
                principal = user
            default:
                environment["GCE_METADATA_HOST"] = "127.0.0.1:\(fixture.standIn.port)"
                principal = IAMFixture.metadataAccount
            }
            let config = try fixture.writeConfig(credentialsFile: credentialsFile)
            try await fixture.withGateway(config: config, environment: environment) { gateway in
                try await IAMFixture.waitForReadiness(gateway)
                let response = try await gateway.get(IAMFixture.token(), bearer: IAMFixture.apiKey)
                #expect(response.status == 200, "\(response.text)")
                let token = try #require(try JSON.parse(response.body).objectValue?["token"]?.stringValue)
                let verified = try await fixture.verifyIndependently(token, as: IAMFixture.consumer)
                #expect(verified.keyID != nil)
                #expect(verified.claims["authorization"] == .object(["tripid": "trip-1"]))
                #expect(try await fixture.standIn.calls(kind: "signJwt", principal: principal) >= 1)
            }
        }
    }

    /// Rider tokens short, driver tokens an hour: IAM signs each with its type's lifetime.
    @Test func eachTokenTypeLivesAsLongAsItsLifetimeSays() async throws {
        let both = [IAMFixture.consumer, IAMFixture.driver]
        try await IAMFixture.run(grants: [IAMFixture.runtime: both]) { fixture in
            let config = try fixture.writeConfig(
                credentialsFile: try await fixture.runtimeKeyFile(), backendExtra: ["tokenLifetime: { default: 1h, consumer: 15m }"])
            try await fixture.withGateway(config: config, environment: try fixture.environment()) { gateway in
                try await IAMFixture.waitForReadiness(gateway)
                for (path, lifetime) in [(IAMFixture.token(), 900), (IAMFixture.token("driver", "vehicle-1"), 3600)] {
                    let response = try await gateway.get(path, bearer: IAMFixture.apiKey)
                    #expect(response.status == 200, "\(response.text)")
                    let token = try #require(try JSON.parse(response.body).objectValue?["token"]?.stringValue)
                    let claims = try #require(JWTVerifier.decodeUnverified(token).claims)
                    #expect((claims["exp"]?.integerValue ?? 0) - (claims["iat"]?.integerValue ?? 0) == Int64(lifetime), "\(path)")
                }
            }
        }
    }

    @Test func aThousandRequestsForOneTripMakeOneSignJwtCall() async throws {
        try await IAMFixture.run { fixture in
            let config = try fixture.writeConfig(credentialsFile: try await fixture.runtimeKeyFile())
            try await fixture.withGateway(config: config, environment: try fixture.environment()) { gateway in
                try await IAMFixture.waitForReadiness(gateway)
                let before = try await fixture.standIn.calls(kind: "signJwt")
                let statuses = try await withThrowingTaskGroup(of: [Int].self) { group in
                    for _ in 0..<20 {
                        group.addTask {
                            var statuses: [Int] = []
                            for _ in 0..<50 { statuses.append(try await gateway.get(IAMFixture.token(), bearer: IAMFixture.apiKey).status) }
                            return statuses
                        }
                    }
                    return try await group.reduce(into: [Int]()) { $0 += $1 }
                }
                #expect(statuses.count == 1_000 && statuses.allSatisfy { $0 == 200 })
                #expect(try await fixture.standIn.calls(kind: "signJwt") - before == 1)
            }
        }
    }

    @Test func anAccessTokenNearExpiryIsRefreshedOnceByAHundredConcurrentMints() async throws {
        try await IAMFixture.run { fixture in
            // 235 s tokens are due for refresh 10 s after they are issued (3 min 45 s before expiry).
            try await fixture.standIn.control(#"{"tokenLifetimeSec": 235}"#)
            let config = try fixture.writeConfig(credentialsFile: try await fixture.runtimeKeyFile())
            try await fixture.withGateway(config: config, environment: try fixture.environment()) { gateway in
                try await IAMFixture.waitForReadiness(gateway)
                #expect(try await fixture.standIn.calls(kind: "token") == 1)
                try await Task.sleep(for: .seconds(11))
                let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                    for trip in 0..<100 {
                        group.addTask { try await gateway.get(IAMFixture.token("consumer", "trip-\(trip)"), bearer: IAMFixture.apiKey).status }
                    }
                    return try await group.reduce(into: [Int]()) { $0.append($1) }
                }
                #expect(statuses == Array(repeating: 200, count: 100))
                #expect(try await fixture.standIn.calls(kind: "token") == 2)
                let metrics = try await gateway.metrics()
                #expect(metrics.contains(#"tokengate_access_token_refreshes_total{provider="acme-rides",outcome="ok"} 2"#), "\(metrics)")
            }
        }
    }

    @Test func aMissingPermissionIsNamedInReadinessAndAnswered503WhileAnotherAccountSigns() async throws {
        try await IAMFixture.run(grants: [IAMFixture.runtime: [IAMFixture.driver]]) { fixture in
            let config = try fixture.writeConfig(credentialsFile: try await fixture.runtimeKeyFile())
            let logs = LogRecorder()
            try await fixture.withGateway(config: config, environment: try fixture.environment(), logs: logs) { gateway in
                let body = try await IAMFixture.waitForReadiness(gateway, status: 503, containing: "iam.serviceAccounts.signJwt")
                #expect(body.contains("iam.serviceAccounts.signJwt") && body.contains(IAMFixture.consumer), "\(body)")
                #expect(body.contains("roles/iam.serviceAccountTokenCreator"), "\(body)")
                let refused = try await gateway.get(IAMFixture.token(), bearer: IAMFixture.apiKey)
                #expect(refused.status == 503 && refused.text.contains("backend_unavailable"), "\(refused.text)")
                #expect(try await gateway.get(IAMFixture.token("driver", "vehicle-1"), bearer: IAMFixture.apiKey).status == 200)
                // Granted: the probe finds out by itself and the provider becomes ready.
                try await fixture.standIn.control(#"{"grants": {"\#(IAMFixture.runtime)": ["\#(IAMFixture.consumer)", "\#(IAMFixture.driver)"]}}"#)
                try await IAMFixture.waitForReadiness(gateway, status: 200, within: 20)
                #expect(try await gateway.get(IAMFixture.token(), bearer: IAMFixture.apiKey).status == 200)
            }
            #expect(logs.all.filter { $0.text.contains("IAM refuses to sign") }.count == 1)
        }
    }

    @Test func notReadyUntilAnAccessTokenArrives() async throws {
        try await IAMFixture.run { fixture in
            try await fixture.standIn.control(#"{"faults": {"token": {"status": 503, "count": -1}}}"#)
            let config = try fixture.writeConfig(credentialsFile: try await fixture.runtimeKeyFile())
            try await fixture.withGateway(config: config, environment: try fixture.environment()) { gateway in
                let body = try await IAMFixture.waitForReadiness(gateway, status: 503, containing: "no access token yet")
                #expect(body.contains("no access token yet"), "\(body)")
                #expect(try await gateway.get(IAMFixture.token(), bearer: IAMFixture.apiKey).status == 503)
                try await fixture.standIn.control(#"{"faults": {"token": null}}"#)
                try await IAMFixture.waitForReadiness(gateway, status: 200, within: 20)
                #expect(try await gateway.get(IAMFixture.token(), bearer: IAMFixture.apiKey).status == 200)
            }
        }
    }

    /// Each fault of IAM answers its code, and an unverified token is never served nor cached. A fault that must
    /// fail the request holds for every call while it is set (`count: -1`), so the answer does not depend on which
    /// call reaches IAM first.
    @Test(
        arguments: [
            (#"{"status": 503, "count": 2, "retryAfter": 0}"#, 200, nil),
            (#"{"status": 429, "count": 2, "retryAfter": 0}"#, 200, nil),
            (#"{"status": 503, "count": -1}"#, 503, "backend_unavailable"),
            (#"{"delayMs": 3000, "count": -1}"#, 504, "backend_timeout"),
            (#"{"mode": "unpublishedKey", "count": -1}"#, 502, "backend_invalid_token"),
            (#"{"mode": "otherAccount", "account": "fleet-driver@acme-rides.iam.gserviceaccount.com", "count": -1}"#, 502, "backend_invalid_token"),
            (#"{"mode": "noKid", "count": 1}"#, 200, nil),
        ] as [(String, Int, String?)])
    func everyFaultOfIAMAnswersItsCode(fault: String, status: Int, code: String?) async throws {
        try await IAMFixture.run { fixture in
            let config = try fixture.writeConfig(credentialsFile: try await fixture.runtimeKeyFile(), backendExtra: ["timeout: 1500ms"])
            try await fixture.withGateway(config: config, environment: try fixture.environment()) { gateway in
                try await IAMFixture.waitForReadiness(gateway)
                let callsBefore = try await fixture.standIn.log("signJwt").count
                try await fixture.standIn.control(#"{"faults": {"signJwt": \#(fault)}}"#)
                let response = try await gateway.get(IAMFixture.token(), bearer: IAMFixture.apiKey)
                if response.status != status {
                    // Which calls IAM saw since the fault was set (when each was read and answered, its audience,
                    // the fault it took) tells a retry from a call the test did not make.
                    let calls = try await fixture.standIn.log("signJwt").dropFirst(callsBefore)
                    Issue.record("answered \(response.status): \(response.text)\nsignJwt calls since the fault: \(calls)")
                }
                if let code { #expect(response.text.contains(code), "\(response.text)") }
                if status == 200 {
                    let token = try #require(try JSON.parse(response.body).objectValue?["token"]?.stringValue)
                    // A kid-less token (IAM's signBlob way) is verified against the account's keys: here, it is.
                    #expect(try await fixture.verifyIndependently(token, as: IAMFixture.consumer).claims["iss"] == .string(IAMFixture.consumer))
                    return
                }
                // Nothing was cached: with IAM well again, the next request mints anew.
                try await fixture.standIn.control(#"{"faults": {"signJwt": null}}"#)
                let before = try await fixture.standIn.calls(kind: "signJwt")
                #expect(try await gateway.get(IAMFixture.token(), bearer: IAMFixture.apiKey).status == 200)
                #expect(try await fixture.standIn.calls(kind: "signJwt") - before == 1)
            }
        }
    }
}
