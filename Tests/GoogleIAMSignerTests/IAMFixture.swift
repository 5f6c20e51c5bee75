import AsyncHTTPClient
import Foundation
import GoogleIAMSigner
import JOSE
import Logging
import NIOCore
import OpenSSLPrimitives
import Testing
import TokenGateCore
import TokenGateHTTP
import TokenGateTesting

/// A `google-iam` provider through the real gateway on a loopback port, against the Google stand-in: the gateway's
/// own identity (`runtime`) may sign as the two Fleet Engine accounts unless a test says otherwise.
struct IAMFixture {
    static let project = "acme-rides"
    static let runtime = "tokengate@acme-rides.iam.gserviceaccount.com"
    static let consumer = "fleet-consumer@acme-rides.iam.gserviceaccount.com"
    static let driver = "fleet-driver@acme-rides.iam.gserviceaccount.com"
    static let metadataAccount = "standin-default@standin-project.iam.gserviceaccount.com"
    static let apiKey = "acme-dispatch-key-0123456789"

    let standIn: GoogleStandIn
    let directory: TemporaryDirectory

    /// A stand-in with the three accounts (the runtime one's key file exported) and `grants`, then `body`.
    static func run(
        grants: [String: [String]] = [runtime: [consumer, driver]], _ body: (IAMFixture) async throws -> Void
    ) async throws {
        try await GoogleStandIn.with { standIn in
            let directory = try TemporaryDirectory(prefix: "iam")
            defer { directory.remove() }
            let grantsJSON = grants.map { "\"\($0.key)\": [\($0.value.map { "\"\($0)\"" }.joined(separator: ", "))]" }
            try await standIn.control(
                """
                {"accounts": [{"email": "\(runtime)", "projectId": "\(project)", "exportKeyFile": true},
                              {"email": "\(consumer)", "projectId": "\(project)"}, {"email": "\(driver)", "projectId": "\(project)"}],
                 "grants": {\(grantsJSON.joined(separator: ", "))}}
                """)
            try await body(IAMFixture(standIn: standIn, directory: directory))
        }
    }

    /// The runtime account's exported service-account key file.
    func runtimeKeyFile() async throws -> String {
        let state = try await standIn.state()
        return try #require(state["accounts"]?.objectValue?[Self.runtime]?.objectValue?["keyFile"]?.stringValue)
    }

    /// An environment with nothing of the machine's in it: an empty home, so no gcloud file is found by accident.
    func environment(_ extra: [String: String] = [:]) throws -> [String: String] {
        let home = try directory.makeDirectory("home")
        return ["HOME": home, "PATH": "/usr/bin:/bin"].merging(extra) { $1 }
    }

    /// Writes config.yaml with a google-iam provider whose endpoints are the stand-in's; `backendExtra` lines are
    /// added to its backend section, `providerExtra` lines to the provider's.
    func writeConfig(credentialsFile: String? = nil, backendExtra: [String] = [], providerExtra: [String] = []) throws -> String {
        var backend = [
            "type: google-iam",
            "serviceAccounts: { consumer: \(Self.consumer), driver: \(Self.driver) }",
            "endpoints:",
            "  iamCredentials: \(standIn.baseURL)",
            "  publicKeys: \(standIn.baseURL)/service_accounts/v1/jwk/{serviceAccount}",
            "  oauthToken: \(standIn.baseURL)/token",
        ]
        if let credentialsFile { backend.append("credentialsFile: \(credentialsFile)") }
        backend += backendExtra
        return try directory.write(
            "config.yaml",
            """
            providers:
              acme-rides:
                backend:
            \(backend.map { "      \($0)" }.joined(separator: "\n"))
            \(providerExtra.map { "    \($0)" }.joined(separator: "\n"))
                clients:
                  - name: dispatch
                    type: api-key
                    keySha256: \(HexBytes.encode(try Digest.sha256(Array(Self.apiKey.utf8))))
                    allow: { consumer: any, driver: any }
            """)
    }

    /// Runs the gateway on `config` with `environment` as the process environment ADC reads.
    func withGateway(
        config: String, environment: [String: String], logs: LogRecorder? = nil, _ body: (RunningGateway) async throws -> Void
    ) async throws {
        let registry = BackendRegistry([GoogleIAMSignerFactory(httpClient: HTTPClient.shared, environment: environment)])
        try await RunningGateway.with(
            configuration: config, registry: registry, clock: .system,
            logger: logs?.logger ?? Logger(label: "tokengate-test", factory: { _ in SwiftLogNoOpLogHandler() }), body)
    }

    /// Waits (bounded) until the admin listener's `/readyz` answers `status` with a body containing `text`;
    /// returns its last body.
    @discardableResult
    static func waitForReadiness(
        _ gateway: RunningGateway, status: Int = 200, containing text: String = "", within seconds: Int = 30
    ) async throws -> String {
        var last = ""
        for _ in 0..<(seconds * 20) {
            let response = try await RunningGateway.Endpoint(baseURL: gateway.adminURL).get("/readyz")
            last = response.text
            if response.status == status, text.isEmpty || last.contains(text) { return last }
            try await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("readiness never answered \(status): \(last)")
        return last
    }

    static func token(_ type: String = "consumer", _ id: String = "trip-1") -> String {
        type == "consumer"
            ? "/v1/providers/acme-rides/tokens/consumer?tripId=\(id)" : "/v1/providers/acme-rides/tokens/driver?vehicleId=\(id)"
    }

    /// Verifies `token` as an outsider would: with the keys the stand-in publishes for `account`, nothing of the
    /// gateway's.
    func verifyIndependently(_ token: String, as account: String) async throws -> VerifiedJWT {
        let response = try await HTTPClient.shared.execute(
            HTTPClientRequest(url: "\(standIn.baseURL)/service_accounts/v1/jwk/\(account)"), timeout: .seconds(10))
        let body = try await response.body.collect(upTo: 1 << 20)
        let keys = try JWKSet(json: Array(body.readableBytesView), algorithm: .rs256)
        var policy = ValidationPolicy()
        policy.allowedAlgorithms = [.rs256]
        policy.issuer = account
        policy.audiences = [FleetEngineClaims.defaultAudience]
        let now = Int64(Date().timeIntervalSince1970)
        guard JWTVerifier.decodeUnverified(token).header?["kid"] == nil else {
            policy.requireKeyID = true
            return try JWTVerifier(keys: keys).verify(token, policy: policy, now: now)
        }
        // No kid (IAM's signBlob way): one of the account's published keys must verify it.
        policy.requireKeyID = false
        for key in keys.keys {
            if let verified = try? JWTVerifier.verify(token, with: key, policy: policy, now: now) { return verified }
        }
        throw JWTValidationError(.badSignature, "no published key of \(account) verifies the kid-less token")
    }
}

extension TemporaryDirectory {
    /// Makes `name` inside this directory; returns its path.
    func makeDirectory(_ name: String) throws -> String {
        let path = "\(self.path)/\(name)"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        return path
    }
}
