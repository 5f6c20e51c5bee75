import Foundation
import GoogleAuth
import JOSE
import Testing
import TokenGateTesting

/// Each ADC source yields a token the stand-in accepts: IAM signJwt with it succeeds for an account its principal
/// was granted, and the stand-in's call log names that principal.
@Suite struct SourcesTests {
    @Test func serviceAccountFileNamedByCredentialsFile() async throws {
        try await GoogleStandIn.with { standIn in
            let keyFile = try await standIn.exportKeyFile(Fixture.keyAccount)
            try await standIn.register(Fixture.target)
            try await standIn.grant(Fixture.keyAccount, [Fixture.target])
            let credentials = try resolve(file: keyFile)
            #expect(credentials.summary == "service account \(Fixture.keyAccount) (credentialsFile \(keyFile))")
            let token = try await credentials.accessToken()
            #expect(try await standIn.signJwtStatus(for: Fixture.target, with: token) == 200)
            #expect(try await standIn.lastPrincipal(of: "token") == Fixture.keyAccount)
        }
    }

    @Test func serviceAccountFileNamedByEnvironment() async throws {
        try await GoogleStandIn.with { standIn in
            let keyFile = try await standIn.exportKeyFile(Fixture.keyAccount)
            try await standIn.register(Fixture.target)
            try await standIn.grant(Fixture.keyAccount, [Fixture.target])
            let credentials = try resolve(environment: ["GOOGLE_APPLICATION_CREDENTIALS": keyFile, "HOME": "/nonexistent-home"])
            #expect(credentials.summary.contains("GOOGLE_APPLICATION_CREDENTIALS \(keyFile)"))
            let token = try await credentials.accessToken()
            #expect(try await standIn.signJwtStatus(for: Fixture.target, with: token) == 200)
        }
    }

    @Test func serviceAccountFileInGcloudConfigDirectory() async throws {
        try await GoogleStandIn.with { standIn in
            let keyFile = try await standIn.exportKeyFile(Fixture.keyAccount)
            try await standIn.register(Fixture.target)
            try await standIn.grant(Fixture.keyAccount, [Fixture.target])
            let config = try TemporaryDirectory(prefix: "gcloud")
            defer { config.remove() }
            let adc = try config.write("application_default_credentials.json", [UInt8](Data(contentsOf: URL(fileURLWithPath: keyFile))))
            let credentials = try resolve(environment: ["CLOUDSDK_CONFIG": config.path, "HOME": "/nonexistent-home"])
            #expect(credentials.summary.contains("gcloud \(adc)"))
            let token = try await credentials.accessToken()
            #expect(try await standIn.signJwtStatus(for: Fixture.target, with: token) == 200)
        }
    }

    @Test func authorizedUserFileRefreshesAtTheConfiguredEndpoint() async throws {
        try await GoogleStandIn.with { standIn in
            let userFile = try await standIn.exportAuthorizedUser()
            try await standIn.register(Fixture.target)
            try await standIn.grant(Fixture.userEmail, [Fixture.target])
            let credentials = try resolve(file: userFile, endpoints: standIn.endpoints)
            let token = try await credentials.accessToken()
            #expect(try await standIn.signJwtStatus(for: Fixture.target, with: token) == 200)
            #expect(try await standIn.lastPrincipal(of: "token") == Fixture.userEmail)
        }
    }

    @Test func externalAccountWithFileSubjectTokenAndImpersonation() async throws {
        try await GoogleStandIn.with { standIn in
            let directory = try TemporaryDirectory(prefix: "wif")
            defer { directory.remove() }
            let subjectFile = try directory.write("token", "k8s-projected-token-1\n")
            try await standIn.control(
                #"{"workloadProviders": [{"audience": "\#(Fixture.audience)", "subjects": {"k8s-projected-token-1": "pod-a"}}]}"#)
            try await standIn.register(Fixture.impersonated)
            try await standIn.register(Fixture.target)
            try await standIn.grant(Fixture.poolPrincipalPrefix + "pod-a", [Fixture.impersonated])
            try await standIn.grant(Fixture.impersonated, [Fixture.target])
            let file = try writeJSON(
                directory, "external.json",
                [
                    "type": "external_account", "audience": .string(Fixture.audience),
                    "subject_token_type": .string(Fixture.jwtType), "token_url": .string("\(standIn.baseURL)/v1/token"),
                    "service_account_impersonation_url": .string(standIn.impersonationURL(Fixture.impersonated)),
                    "credential_source": .object(["file": .string(subjectFile), "format": .object(["type": "text"])]),
                ])
            let credentials = try resolve(file: file)
            #expect(credentials.summary.contains(Fixture.impersonated))
            let token = try await credentials.accessToken()
            #expect(try await standIn.signJwtStatus(for: Fixture.target, with: token) == 200)
            #expect(try await standIn.calls(kind: "sts", principal: Fixture.poolPrincipalPrefix + "pod-a") == 1)
            #expect(try await standIn.lastPrincipal(of: "generateAccessToken") == Fixture.poolPrincipalPrefix + "pod-a")
        }
    }

    /// The subject token URL is the stand-in's own metadata server (text: the email; json: the recursive account
    /// document's "email"), with the `Metadata-Flavor` header the file's `headers` carry: a real URL answering text
    /// or JSON, with no extra server in the test.
    @Test(arguments: [false, true])
    func externalAccountWithURLSubjectToken(json: Bool) async throws {
        try await GoogleStandIn.with { standIn in
            let directory = try TemporaryDirectory(prefix: "wif")
            defer { directory.remove() }
            try await standIn.control(
                #"{"workloadProviders": [{"audience": "\#(Fixture.audience)", "subjects": {"\#(Fixture.metadataAccount)": "vm-b"}}]}"#)
            try await standIn.register(Fixture.target)
            try await standIn.grant(Fixture.poolPrincipalPrefix + "vm-b", [Fixture.target])
            let base = "\(standIn.baseURL)/computeMetadata/v1/instance/service-accounts/default"
            let source: JSONObject =
                json
                ? [
                    "url": .string("\(base)/?recursive=true"), "headers": .object(["Metadata-Flavor": "Google"]),
                    "format": .object(["type": "json", "subject_token_field_name": "email"]),
                ]
                : ["url": .string("\(base)/email"), "headers": .object(["Metadata-Flavor": "Google"])]
            let file = try writeJSON(
                directory, "external.json",
                [
                    "type": "external_account", "audience": .string(Fixture.audience),
                    "subject_token_type": .string(Fixture.jwtType), "token_url": .string("\(standIn.baseURL)/v1/token"),
                    "credential_source": .object(source),
                ])
            let token = try await resolve(file: file).accessToken()
            #expect(try await standIn.signJwtStatus(for: Fixture.target, with: token) == 200)
            #expect(try await standIn.lastPrincipal(of: "sts") == Fixture.poolPrincipalPrefix + "vm-b")
        }
    }

    @Test func impersonatedServiceAccountWithServiceAccountSource() async throws {
        try await GoogleStandIn.with { standIn in
            let directory = try TemporaryDirectory(prefix: "imp")
            defer { directory.remove() }
            let keyFile = try await standIn.exportKeyFile(Fixture.keyAccount)
            try await standIn.register(Fixture.impersonated)
            try await standIn.register(Fixture.target)
            try await standIn.grant(Fixture.keyAccount, [Fixture.impersonated])
            try await standIn.grant(Fixture.impersonated, [Fixture.target])
            let file = try writeJSON(
                directory, "impersonated.json",
                [
                    "type": "impersonated_service_account",
                    "service_account_impersonation_url": .string(standIn.impersonationURL(Fixture.impersonated)),
                    "delegates": [], "source_credentials": .object(try readObject(keyFile)),
                ])
            let credentials = try resolve(file: file)
            #expect(credentials.summary.contains("service account \(Fixture.impersonated) impersonated by service account \(Fixture.keyAccount)"))
            let token = try await credentials.accessToken()
            #expect(try await standIn.signJwtStatus(for: Fixture.target, with: token) == 200)
            // The key account alone may not sign for the target: the token really is the impersonated account's.
            #expect(try await standIn.lastPrincipal(of: "signJwt") == Fixture.impersonated)
        }
    }

    @Test func impersonatedServiceAccountWithUserSourceAndDelegates() async throws {
        try await GoogleStandIn.with { standIn in
            let directory = try TemporaryDirectory(prefix: "imp")
            defer { directory.remove() }
            let userFile = try await standIn.exportAuthorizedUser()
            try await standIn.register(Fixture.otherKeyAccount)
            try await standIn.register(Fixture.impersonated)
            try await standIn.register(Fixture.target)
            try await standIn.grant(Fixture.userEmail, [Fixture.otherKeyAccount])
            try await standIn.grant(Fixture.otherKeyAccount, [Fixture.impersonated])
            try await standIn.grant(Fixture.impersonated, [Fixture.target])
            let file = try writeJSON(
                directory, "impersonated.json",
                [
                    "type": "impersonated_service_account",
                    "service_account_impersonation_url": .string(standIn.impersonationURL(Fixture.impersonated)),
                    "delegates": [.string(Fixture.otherKeyAccount)], "source_credentials": .object(try readObject(userFile)),
                ])
            let token = try await resolve(file: file, endpoints: standIn.endpoints).accessToken()
            #expect(try await standIn.signJwtStatus(for: Fixture.target, with: token) == 200)
        }
    }

    @Test func metadataServerFromGCEMetadataHost() async throws {
        try await GoogleStandIn.with { standIn in
            try await standIn.register(Fixture.target)
            try await standIn.grant(Fixture.metadataAccount, [Fixture.target])
            let credentials = try resolve(environment: ["GCE_METADATA_HOST": "127.0.0.1:\(standIn.port)", "HOME": "/nonexistent-home"])
            #expect(credentials.summary == "the metadata server at 127.0.0.1:\(standIn.port)")
            let token = try await credentials.accessToken()
            #expect(try await standIn.signJwtStatus(for: Fixture.target, with: token) == 200)
            #expect(try await standIn.lastPrincipal(of: "metadata") == Fixture.metadataAccount)
        }
    }
}
