import GoogleAuth
import JOSE
import Testing
import TokenGateTesting

/// A file that cannot be used is a `.configuration` error naming the file and the field, at resolve time.
@Suite struct ConfigurationTests {
    // Only the PEM frame, around no key: assembled here so no file of the repository looks like it holds a key.
    static let pem = ["BEGIN", "END"].map { "-----\($0) PRIVATE KEY-----\n" }.joined(separator: "not a key\n")
    static let serviceAccount: JSONObject = [
        "type": "service_account", "client_email": "a@p.iam.gserviceaccount.com", "private_key_id": "k1",
        "private_key": .string(pem), "token_uri": "https://oauth2.googleapis.com/token",
    ]
    static let external: JSONObject = [
        "type": "external_account", "audience": .string(Fixture.audience), "subject_token_type": .string(Fixture.jwtType),
        "token_url": "https://sts.googleapis.com/v1/token", "credential_source": .object(["file": "/var/run/token"]),
    ]

    private func edited(_ object: JSONObject, _ changes: [(String, JSONValue?)]) -> JSONObject {
        var object = object
        for (name, value) in changes { object[name] = value }
        return object
    }

    @Test func notJSON() async throws {
        try await TemporaryDirectory.with { directory in
            let path = try directory.write("broken.json", "{\"type\": \"service_account\",")
            let error = configurationError(path)
            #expect(error?.message.contains(path) == true)
            #expect(error?.message.contains("JSON") == true)
        }
    }

    @Test(
        arguments: [
            ("unknown type", [("type", JSONValue.string("gdch_service_account"))], "\"type\""),
            ("no type", [("type", nil)], "\"type\""),
            ("no client_email", [("client_email", nil)], "\"client_email\""),
            ("no private_key", [("private_key", nil)], "\"private_key\""),
            ("key not a string", [("private_key", .integer(1))], "\"private_key\""),
            ("garbage key", [], "\"private_key\""),
            ("http token_uri", [("token_uri", .string("http://oauth.example.com/token"))], "\"token_uri\""),
        ] as [(String, [(String, JSONValue?)], String)])
    func serviceAccountFile(_ case: String, changes: [(String, JSONValue?)], field: String) async throws {
        try await TemporaryDirectory.with { directory in
            let path = try writeJSON(directory, "sa.json", edited(Self.serviceAccount, changes))
            let error = configurationError(path)
            #expect(error?.message.contains(path) == true, "\(`case`)")
            #expect(error?.message.contains(field) == true, "\(`case`): \(error?.message ?? "")")
        }
    }

    @Test(
        arguments: [
            ("no audience", [("audience", nil)], "\"audience\""),
            ("no credential_source", [("credential_source", nil)], "\"credential_source\""),
            (
                "aws source without its URL", [("credential_source", .object(["environment_id": "aws1"]))],
                "\"credential_source.regional_cred_verification_url\""
            ),
            (
                "file and certificate", [("credential_source", .object(["file": "/t", "certificate": .object([:])]))],
                "\"credential_source.file\" and \"credential_source.certificate\" are both set"
            ),
            (
                "executable and url", [("credential_source", .object(["executable": .object([:]), "url": "https://x.example/t"]))],
                "\"credential_source.executable\" and \"credential_source.url\" are both set"
            ),
            ("empty source", [("credential_source", .object([:]))], "\"credential_source.file\" is missing"),
            (
                "bad format", [("credential_source", .object(["file": "/t", "format": .object(["type": "xml"])]))],
                "\"credential_source.format.type\""
            ),
            (
                "json without field", [("credential_source", .object(["file": "/t", "format": .object(["type": "json"])]))],
                "\"credential_source.format.subject_token_field_name\""
            ),
            ("http token_url", [("token_url", .string("http://sts.example.com/v1/token"))], "\"token_url\""),
            ("http source url", [("credential_source", .object(["url": "http://10.0.0.1/token"]))], "\"credential_source.url\""),
            (
                "http impersonation", [("service_account_impersonation_url", .string("http://iam.example.com/x:generateAccessToken"))],
                "\"service_account_impersonation_url\""
            ),
        ] as [(String, [(String, JSONValue?)], String)])
    func externalAccountFile(_ case: String, changes: [(String, JSONValue?)], field: String) async throws {
        try await TemporaryDirectory.with { directory in
            let path = try writeJSON(directory, "external.json", edited(Self.external, changes))
            let error = configurationError(path)
            #expect(error?.message.contains(path) == true, "\(`case`)")
            #expect(error?.message.contains(field) == true, "\(`case`): \(error?.message ?? "")")
        }
    }

    @Test func authorizedUserWithoutRefreshToken() async throws {
        try await TemporaryDirectory.with { directory in
            let path = try writeJSON(directory, "user.json", ["type": "authorized_user", "client_id": "c", "client_secret": "s"])
            let error = configurationError(path)
            #expect(error?.message.contains(path) == true)
            #expect(error?.message.contains("\"refresh_token\"") == true)
        }
    }

    @Test func impersonatedWithUnsupportedSource() async throws {
        try await TemporaryDirectory.with { directory in
            let path = try writeJSON(
                directory, "imp.json",
                [
                    "type": "impersonated_service_account",
                    "service_account_impersonation_url":
                        "https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/x@p.iam.gserviceaccount.com:generateAccessToken",
                    "source_credentials": .object(Self.external),
                ])
            let error = configurationError(path)
            #expect(error?.message.contains(path) == true)
            #expect(error?.message.contains("\"source_credentials.type\"") == true)
        }
    }

    @Test func missingFileNamedByEnvironmentIsAnErrorNotAFallThrough() {
        do {
            _ = try resolve(environment: ["GOOGLE_APPLICATION_CREDENTIALS": "/nonexistent/key.json", "HOME": "/nonexistent-home"])
            Issue.record("resolved")
        } catch {
            #expect(error.kind == .configuration)
            #expect(error.message.contains("/nonexistent/key.json"))
        }
    }

    @Test func plainHTTPOAuthEndpointToAnotherHostIsRefused() async throws {
        try await GoogleStandIn.with { standIn in
            let userFile = try await standIn.exportAuthorizedUser()
            let error = configurationError(userFile, endpoints: GoogleEndpoints(oauthToken: "http://oauth.example.com/token"))
            #expect(error?.message.contains("http://oauth.example.com/token") == true)
        }
    }

    @Test func oversizedFileIsRefused() async throws {
        try await TemporaryDirectory.with { directory in
            let path = try directory.write("big.json", [UInt8](repeating: UInt8(ascii: " "), count: 70_000))
            let error = configurationError(path)
            #expect(error?.message.contains(path) == true)
        }
    }
}
