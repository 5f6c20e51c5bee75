import GoogleAuth
import JOSE
import Testing
import TokenGateTesting

/// Access tokens, refresh tokens and client secrets never appear in logs, errors, summaries or descriptions.
@Suite struct SecretHygieneTests {
    @Test func noSecretInLogsSummaryOrDescriptionAfterSuccess() async throws {
        try await GoogleStandIn.with { standIn in
            let logs = LogRecorder()
            let userFile = try await standIn.exportAuthorizedUser()
            let credentials = try resolve(file: userFile, endpoints: standIn.endpoints, logs: logs)
            let token = try await credentials.accessToken()
            #expect(!token.value.isEmpty)
            let texts = logs.all.map(\.text) + [credentials.summary, token.description, "\(token)", String(describing: credentials)]
            expectNoSecrets([token.value, Fixture.refreshToken, Fixture.clientSecret], in: texts)
        }
    }

    @Test func noSecretInErrorsOrLogsAfterRefusal() async throws {
        try await GoogleStandIn.with { standIn in
            let logs = LogRecorder()
            // A refresh token the stand-in does not know: 400 invalid_grant.
            let userFile = try await standIn.exportAuthorizedUser()
            let unknown = "1//an-unknown-refresh-token-value"
            var object = try readObject(userFile)
            object["refresh_token"] = .string(unknown)
            let directory = try TemporaryDirectory(prefix: "user")
            defer { directory.remove() }
            let file = try writeJSON(directory, "user.json", object)
            let error = await tokenError(try resolve(file: file, endpoints: standIn.endpoints, logs: logs))
            #expect(error?.kind == .refused(status: 400))
            #expect(error?.message.contains("invalid_grant") == true)
            let texts = logs.all.map(\.text) + [error.map { "\($0)" } ?? "", error?.message ?? ""]
            expectNoSecrets([unknown, Fixture.clientSecret], in: texts)
        }
    }

    @Test func noKeyMaterialInSummaryOrLogs() async throws {
        try await GoogleStandIn.with { standIn in
            let logs = LogRecorder()
            let keyFile = try await standIn.exportKeyFile(Fixture.keyAccount)
            let pem = try #require(try readObject(keyFile)["private_key"]?.stringValue)
            let credentials = try resolve(file: keyFile, logs: logs)
            let token = try await credentials.accessToken()
            let body = pem.split(separator: "\n").dropFirst().first.map(String.init) ?? pem
            expectNoSecrets([body, token.value], in: logs.all.map(\.text) + [credentials.summary])
        }
    }
}
