import Foundation
import GoogleAuth
import JOSE
import Testing
import TokenGateTesting

/// Access tokens, refresh tokens, client secrets, AWS keys and session tokens, subject tokens and private keys
/// never appear in logs, errors, summaries, provenance or descriptions.
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

    /// AWS from the metadata service: the role's secret, its session token and the IMDSv2 session token stay out,
    /// after a success and after STS refused the (wrongly signed) request.
    @Test func noAWSSecretAfterSuccessOrRefusal() async throws {
        try await GoogleStandIn.with { standIn in
            let (audience, _) = Federation.pool(601, "aws")
            try await standIn.provider(audience)
            let identity = try await standIn.awsIdentity()
            try await TemporaryDirectory.with { directory in
                let logs = LogRecorder()
                let file = try writeJSON(directory, "aws.json", Federation.aws(standIn, audience: audience))
                let credentials = try resolve(file: file, logs: logs)
                let token = try await credentials.accessToken()
                var texts = logs.all.map(\.text) + [credentials.summary, token.provenance ?? "", "\(token)"]
                // Signed with a wrong secret (from the environment): refused, and the secret still not shown.
                // Its last character changed (a random secret ends in "x" once in 64).
                let wrong = String(identity.secret.dropLast()) + (identity.secret.hasSuffix("x") ? "y" : "x")
                let environment = [
                    "HOME": "/nonexistent-home", "AWS_ACCESS_KEY_ID": Federation.awsKey, "AWS_SECRET_ACCESS_KEY": wrong,
                    "AWS_SESSION_TOKEN": identity.sessionToken ?? "", "AWS_REGION": "us-east-1",
                ]
                let error = await tokenError(try resolve(file: file, environment: environment, logs: logs))
                #expect(error?.message.contains("SignatureDoesNotMatch") == true, "\(error?.message ?? "")")
                texts += logs.all.map(\.text) + [error?.message ?? "", error.map { "\($0)" } ?? ""]
                expectNoSecrets([identity.secret, wrong, identity.sessionToken ?? "", token.value], in: texts)
                #expect(!texts.contains { $0.contains("AQAEA") }, "an IMDSv2 session token appears")
            }
        }
    }

    /// An executable's token, and whatever a failing one printed, stay out.
    @Test func noExecutableOutputInLogsOrErrors() async throws {
        try await GoogleStandIn.with { standIn in
            let (audience, _) = Federation.pool(602, "exec")
            let subject = "exec-subject-token-never-logged"
            try await standIn.provider(audience, subjects: [subject: "worker"])
            try await TemporaryDirectory.with { directory in
                let logs = LogRecorder()
                let good = try writeJSON(
                    directory, "good.json", Federation.executable(standIn, audience: audience, arguments: "--token \(subject)"))
                let credentials = try resolve(file: good, environment: Federation.executableEnvironment(), logs: logs)
                let token = try await credentials.accessToken()
                // A program that prints a credential, then fails.
                let leaky = try directory.write("leaky.sh", "#!/bin/sh\necho 'printed-secret-0123456789'\nexit 3\n")
                try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: leaky)
                var object = Federation.executable(standIn, audience: audience, arguments: "")
                object["credential_source"] = .object(["executable": .object(["command": .string(leaky), "timeout_millis": 5000])])
                let bad = try writeJSON(directory, "bad.json", object)
                let error = await tokenError(try resolve(file: bad, environment: Federation.executableEnvironment(), logs: logs))
                #expect(error?.kind == .credentialSourceFailed && error?.message.contains("exited with status 3") == true)
                let texts = logs.all.map(\.text) + [credentials.summary, token.provenance ?? "", error?.message ?? "", error.map { "\($0)" } ?? ""]
                expectNoSecrets([subject, "printed-secret-0123456789", token.value], in: texts)
            }
        }
    }

    /// The workload's private key stays out (its certificate is public, and is what the provenance fingerprints).
    @Test func noPrivateKeyOfAWorkloadCertificate() async throws {
        try await GoogleStandIn.with { standIn in
            let (audience, _) = Federation.pool(603, "x509")
            try await standIn.provider(audience)
            let workload = try await standIn.x509Client("workload")
            let keyPEM = try String(contentsOfFile: try #require(workload["keyFile"]?.stringValue), encoding: .utf8)
            try await TemporaryDirectory.with { directory in
                let logs = LogRecorder()
                let configuration = try #require(workload["certificateConfigFile"]?.stringValue)
                let file = try writeJSON(directory, "x509.json", Federation.certificate(standIn, audience: audience, configuration: configuration))
                let credentials = try resolve(file: file, environment: CertificateSourceTests.environment(standIn), logs: logs)
                let token = try await credentials.accessToken()
                let body = keyPEM.split(separator: "\n").dropFirst().first.map(String.init) ?? keyPEM
                let texts = logs.all.map(\.text) + [credentials.summary, token.provenance ?? ""]
                expectNoSecrets([body, token.value], in: texts)
                #expect(!texts.contains { $0.contains("-----BEGIN") })
            }
        }
    }
}
