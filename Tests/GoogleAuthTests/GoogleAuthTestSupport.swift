import AsyncHTTPClient
import Foundation
import GoogleAuth
import JOSE
import Logging
import Synchronization
import Testing
import TokenGateTesting

/// Accounts and principals the tests register with the stand-in.
enum Fixture {
    static let project = "tg-test"
    static let keyAccount = "signer-key@tg-test.iam.gserviceaccount.com"
    static let otherKeyAccount = "other-key@tg-test.iam.gserviceaccount.com"
    static let target = "fleet-signer@tg-test.iam.gserviceaccount.com"
    static let impersonated = "impersonated@tg-test.iam.gserviceaccount.com"
    static let metadataAccount = "standin-default@standin-project.iam.gserviceaccount.com"
    static let userEmail = "alice@example.com"
    static let clientID = "client-1.apps.googleusercontent.com"
    static let clientSecret = "client-secret-d0n7-l34k"
    static let refreshToken = "1//refresh-token-that-must-never-leak"
    static let audience = "//iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/pool/providers/prov"
    static let poolPrincipalPrefix = "principal://iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/pool/subject/"
    static let jwtType = "urn:ietf:params:oauth:token-type:jwt"
}

extension GoogleStandIn {
    /// Registers `email` with an exported key file and returns that file's path.
    func exportKeyFile(_ email: String) async throws -> String {
        let state = try await control(#"{"accounts": [{"email": "\#(email)", "projectId": "\#(Fixture.project)", "exportKeyFile": true}]}"#)
        return try #require(state["accounts"]?.objectValue?[email]?.objectValue?["keyFile"]?.stringValue)
    }

    /// Registers `email` (no key file), the target of signJwt and generateAccessToken.
    func register(_ email: String) async throws {
        try await control(#"{"accounts": [{"email": "\#(email)", "projectId": "\#(Fixture.project)"}]}"#)
    }

    /// Lets `principal` act as each of `targets` (Token Creator).
    func grant(_ principal: String, _ targets: [String]) async throws {
        let list = targets.map { "\"\($0)\"" }.joined(separator: ",")
        try await control(#"{"grants": {"\#(principal)": [\#(list)]}}"#)
    }

    /// Registers the OAuth client and user, writes the authorized_user file (no token_uri), returns its path.
    func exportAuthorizedUser(refreshToken: String = Fixture.refreshToken) async throws -> String {
        let state = try await control(
            #"""
            {"authorizedUsers": [{"clientId": "\#(Fixture.clientID)", "clientSecret": "\#(Fixture.clientSecret)",
              "refreshToken": "\#(refreshToken)", "email": "\#(Fixture.userEmail)", "exportFile": true}]}
            """#)
        return try #require(state["authorizedUsers"]?.objectValue?[Fixture.clientID]?.objectValue?["file"]?.stringValue)
    }

    /// The IAM generateAccessToken URL for `email`.
    func impersonationURL(_ email: String) -> String {
        "\(baseURL)/v1/projects/-/serviceAccounts/\(email):generateAccessToken"
    }

    /// Endpoints that send authorized_user refreshes here.
    var endpoints: GoogleEndpoints { GoogleEndpoints(oauthToken: "\(baseURL)/token") }

    /// The HTTP status of IAM signJwt for `target`, called with `token`: 200 proves the stand-in accepts the token and
    /// that its principal was granted on `target`.
    func signJwtStatus(for target: String, with token: GoogleAccessToken) async throws -> Int {
        try await signJwt(for: target, bearer: token.value)
    }

    /// The principal of the last logged call of `kind`.
    func lastPrincipal(of kind: String) async throws -> String? {
        let log = try await calls()["log"]?.arrayValue ?? []
        return log.last { $0.objectValue?["kind"]?.stringValue == kind }?.objectValue?["principal"]?.stringValue
    }
}

/// Counts `onRefresh` outcomes.
final class RefreshCounter: Sendable {
    private let counts = Mutex((succeeded: 0, failed: 0))
    var succeeded: Int { counts.withLock { $0.succeeded } }
    var failed: Int { counts.withLock { $0.failed } }
    var callback: @Sendable (Bool) -> Void {
        { ok in self.counts.withLock { if ok { $0.succeeded += 1 } else { $0.failed += 1 } } }
    }
}

/// Resolves ADC with no ambient environment unless given (HOME points nowhere, so no gcloud file is found).
func resolve(
    file: String? = nil, environment: [String: String] = ["HOME": "/nonexistent-home"],
    endpoints: GoogleEndpoints = GoogleEndpoints(), logs: LogRecorder = LogRecorder(),
    refreshes: RefreshCounter = RefreshCounter()
) throws(GoogleAuthError) -> any GoogleCredentials {
    try ApplicationDefaultCredentials.resolve(
        credentialsFile: file, environment: environment, endpoints: endpoints, client: .shared,
        logger: logs.logger, onRefresh: refreshes.callback
    )
}

/// The `.configuration` error resolving `file` throws, or a test failure.
func configurationError(
    _ file: String, endpoints: GoogleEndpoints = GoogleEndpoints(), environment: [String: String] = ["HOME": "/nonexistent-home"]
) -> GoogleAuthError? {
    do {
        _ = try resolve(file: file, environment: environment, endpoints: endpoints)
        Issue.record("resolving \(file) succeeded")
        return nil
    } catch {
        #expect(error.kind == .configuration)
        return error
    }
}

/// The error `accessToken()` throws, or a test failure.
func tokenError(_ credentials: any GoogleCredentials) async -> GoogleAuthError? {
    do {
        _ = try await credentials.accessToken()
        Issue.record("accessToken() succeeded")
        return nil
    } catch {
        return error
    }
}

/// Asserts that none of `secrets` appears in any text a test or an operator could see.
func expectNoSecrets(_ secrets: [String], in texts: [String], sourceLocation: SourceLocation = #_sourceLocation) {
    for secret in secrets where !secret.isEmpty {
        let leaks = texts.filter { $0.contains(secret) }
        // Never print the text itself: it would put the secret into the test output.
        #expect(leaks.isEmpty, "a secret appears in \(leaks.count) of \(texts.count) texts", sourceLocation: sourceLocation)
    }
}

/// A JSON file in `directory`.
@discardableResult
func writeJSON(_ directory: TemporaryDirectory, _ name: String, _ object: JSONObject) throws -> String {
    try directory.write(name, JSON.serialize(.object(object)))
}

/// A key file's JSON object, to edit.
func readObject(_ path: String) throws -> JSONObject {
    let bytes = try [UInt8](Data(contentsOf: URL(fileURLWithPath: path)))
    guard case .object(let object) = try JSON.parse(bytes) else { throw HarnessError("\(path) is not a JSON object") }
    return object
}
