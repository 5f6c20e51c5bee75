import AsyncHTTPClient
import FileTokenSource
import Foundation
import GoogleIAMSigner
import JOSE
import OpenSSLPrimitives
import StaticKeySigner
import Testing
import TokenGateCore
import TokenGateTesting
import UpstreamTokenServer

/// The four backends the catalogue goes through, each one provider of the same gateway, keyed (as every provider
/// is) by its own Google Cloud project, with one Fleet Engine service account per token type.
enum CatalogueBackend: String, CaseIterable, Sendable, CustomStringConvertible {
    case staticKey = "static-key"
    case googleIAM = "google-iam"
    case upstreamHTTP = "upstream-http"
    case file

    /// The provider, and so the Fleet Engine project its tokens are used in.
    var provider: String {
        switch self {
        case .staticKey: "acme-static"
        case .googleIAM: "acme-iam"
        case .upstreamHTTP: "acme-upstream"
        case .file: "acme-file"
        }
    }

    /// The service account that signs this provider's `type` tokens.
    func account(_ type: TokenType) -> String { "\(type.rawValue)@\(provider).iam.gserviceaccount.com" }

    var description: String { rawValue }
}

/// One gateway with the four providers, each issuing every token type; the Google stand-in signing the
/// `google-iam` provider's tokens; a tenant's token server behind the `upstream-http` provider; a token file, written
/// here, behind the `file` provider; and the Fleet Engine stand-in, told where each signing account publishes its
/// keys (the gateway's `jwks.json` with the account's kid for static-key, Google's key list for google-iam, the
/// tenant's server for upstream-http, the key set itself for file). Roles and resources are the test's to set.
struct CatalogueWorld: Sendable {
    static let apiKey = "catalogue-dispatch-key-0123456789"
    static let runtime = "tokengate@acme-iam.iam.gserviceaccount.com"

    let gateway: RunningGateway
    let fleetEngine: FleetEngineStandIn

    /// Builds the world for `contexts` (the file provider holds a token for each), runs `body`, tears it down.
    static func with(contexts: [TokenContext], _ body: (CatalogueWorld) async throws -> Void) async throws {
        // The keys are made while the Google stand-in starts (it makes its own).
        let generating = Task { try await generateKeys() }
        try await GoogleStandIn.with { google in
            let keys = try await generating.value
            let runtimeKeyFile = try await registerIAMAccounts(at: google)
            try await TenantTokenServer.run(accounts: keys[.upstreamHTTP] ?? [:]) { upstream in
                try await FleetEngineStandIn.with { fleetEngine in
                    let directory = try TemporaryDirectory(prefix: "catalogue")
                    defer { directory.remove() }
                    let config = try writeConfig(
                        in: directory, keys: keys, contexts: contexts, google: google.baseURL, runtimeKeyFile: runtimeKeyFile,
                        upstream: upstream)
                    let home = "\(directory.path)/home"
                    try FileManager.default.createDirectory(atPath: home, withIntermediateDirectories: true)
                    let registry = BackendRegistry([
                        StaticKeySignerFactory(),
                        GoogleIAMSignerFactory(httpClient: HTTPClient.shared, environment: ["HOME": home, "PATH": "/usr/bin:/bin"]),
                        UpstreamTokenServerFactory(httpClient: HTTPClient.shared),
                        FileTokenSourceFactory(),
                    ])
                    try await RunningGateway.with(configuration: config, registry: registry, clock: .system) { gateway in
                        try await waitUntilEveryProviderIsReady(gateway)
                        try await fleetEngine.control([
                            "accounts": .object(
                                accountSpecs(keys: keys, gateway: gateway.baseURL, google: google.baseURL, upstream: upstream))
                        ])
                        try await body(CatalogueWorld(gateway: gateway, fleetEngine: fleetEngine))
                    }
                }
            }
        }
    }

    /// A token from `backend`'s provider: `GET /v1/providers/{id}/tokens/{type}?{query}` with the dispatch key.
    func mint(_ backend: CatalogueBackend, _ type: TokenType, query: String) async throws -> String {
        let response = try await gateway.get(
            "/v1/providers/\(backend.provider)/tokens/\(type.rawValue)\(query.isEmpty ? "" : "?\(query)")", bearer: Self.apiKey)
        try #require(response.status == 200, "\(backend) \(type) \(query): the gateway answered \(response.status) \(response.text)")
        return try #require(response.json["token"]?.stringValue)
    }

    // MARK: - Keys and accounts

    /// The backends that hold keys of their own (static-key's key files, the tenant server's signers, the token
    /// file's signers): one service account per token type, each with its own kid. The three accounts of one type
    /// share its RSA key, made once: generating RSA keys is what this suite would spend most of its time on, and
    /// none of the three can tell, since each account publishes only its own kid.
    private static func generateKeys() async throws -> [CatalogueBackend: [TokenType: ServiceAccountKey]] {
        let shared = try await withThrowingTaskGroup(of: (TokenType, ServiceAccountKey).self) { group in
            for type in TokenType.allCases {
                group.addTask { (type, try ServiceAccountKey.generate(projectID: "catalogue", clientEmail: "\(type.rawValue)@catalogue")) }
            }
            return try await group.reduce(into: [TokenType: ServiceAccountKey]()) { $0[$1.0] = $1.1 }
        }
        var keys: [CatalogueBackend: [TokenType: ServiceAccountKey]] = [:]
        for backend in [CatalogueBackend.staticKey, .upstreamHTTP, .file] {
            for (type, key) in shared {
                guard case .object(var file) = try JSON.parse(try key.json()) else { continue }
                file["project_id"] = .string(backend.provider)
                file["client_email"] = .string(backend.account(type))
                file["private_key_id"] = .string("\(backend.provider)-\(type.rawValue)")
                keys[backend, default: [:]][type] = try ServiceAccountKey(json: JSON.serialize(.object(file)))
            }
        }
        return keys
    }

    /// Registers the gateway's own identity (its key file exported, as a credentials file) and one Fleet Engine
    /// account per token type with the Google stand-in, the gateway's identity granted Token Creator on each;
    /// returns the key file.
    private static func registerIAMAccounts(at google: GoogleStandIn) async throws -> String {
        let project = CatalogueBackend.googleIAM.provider
        let accounts = TokenType.allCases.map { #"{"email": "\#(CatalogueBackend.googleIAM.account($0))", "projectId": "\#(project)"}"# }
        let targets = TokenType.allCases.map { "\"\(CatalogueBackend.googleIAM.account($0))\"" }
        let state = try await google.control(
            """
            {"accounts": [{"email": "\(runtime)", "projectId": "\(project)", "exportKeyFile": true}, \(accounts.joined(separator: ", "))],
             "grants": {"\(runtime)": [\(targets.joined(separator: ", "))]}}
            """)
        return try #require(state["accounts"]?.objectValue?[runtime]?.objectValue?["keyFile"]?.stringValue)
    }

    /// Where the Fleet Engine stand-in finds each signing account's public keys.
    private static func accountSpecs(
        keys: [CatalogueBackend: [TokenType: ServiceAccountKey]], gateway: String, google: String, upstream: String
    ) throws -> JSONObject {
        var accounts = JSONObject()
        for backend in CatalogueBackend.allCases {
            for type in TokenType.allCases {
                let email = backend.account(type)
                let spec: JSONObject
                switch backend {
                case .staticKey:
                    // The provider's jwks.json publishes every type's key: only this account's kid counts for it.
                    let kid = try #require(keys[backend]?[type]).privateKeyID
                    spec = ["jwksUrl": .string("\(gateway)/v1/providers/\(backend.provider)/jwks.json"), "kids": [.string(kid)]]
                case .googleIAM: spec = ["jwksUrl": .string("\(google)/service_accounts/v1/jwk/\(email)")]
                case .upstreamHTTP: spec = ["jwksUrl": .string("\(upstream)/jwks/\(email)")]
                case .file: spec = ["jwks": try JSON.parse(try publicJWKS(try #require(keys[backend]?[type])))]
                }
                accounts[email] = .object(spec)
            }
        }
        return accounts
    }

    private static func publicJWKS(_ account: ServiceAccountKey) throws -> [UInt8] {
        try JWKSet(keys: [account.key.publicKey()]).publicJSON()
    }

    // MARK: - Configuration

    private static func writeConfig(
        in directory: TemporaryDirectory, keys: [CatalogueBackend: [TokenType: ServiceAccountKey]], contexts: [TokenContext],
        google: String, runtimeKeyFile: String, upstream: String
    ) throws -> String {
        let types = TokenType.allCases
        var staticKeys: [String] = []
        var fileVerify: [String] = []
        for type in types {
            let staticAccount = try #require(keys[.staticKey]?[type])
            try directory.write("keys/static/\(type.rawValue).json", try staticAccount.json())
            staticKeys.append("        \(type.rawValue): [{ serviceAccountFile: keys/static/\(type.rawValue).json }]")
            try directory.write("keys/file/\(type.rawValue).jwks.json", try publicJWKS(try #require(keys[.file]?[type])))
            fileVerify.append(
                "        - { jwksFile: keys/file/\(type.rawValue).jwks.json, serviceAccount: \(CatalogueBackend.file.account(type)) }")
        }
        try directory.write("tokens.json", try tokenFile(contexts: contexts, accounts: keys[.file] ?? [:]))
        let iamAccounts = types.map { "        \($0.rawValue): \(CatalogueBackend.googleIAM.account($0))" }
        let upstreamVerify = types.map { type in
            let email = CatalogueBackend.upstreamHTTP.account(type)
            return "        - { jwksUrl: \(upstream)/jwks/\(email), serviceAccount: \(email), tokenTypes: [\(type.rawValue)] }"
        }
        let typeList = types.map(\.rawValue).joined(separator: ", ")
        let clients = """
                clients:
                  - name: dispatch
                    type: api-key
                    keySha256: \(HexBytes.encode(try Digest.sha256(Array(apiKey.utf8))))
                    allow:
                      consumer: any
                      driver: any
                      delivery-driver: any
                      trusted-delivery-driver: any
                      delivery-consumer: any
                      batch-tasks: any
                      fleet-reader: whole-fleet
                      delivery-fleet-reader: whole-fleet
                      server: whole-fleet
                    allowAllTasks: true
                    allowServerTokens: true
            """
        return try directory.write(
            "config.yaml",
            """
            providers:
              \(CatalogueBackend.staticKey.provider):
                backend:
                  type: static-key
                  keys:
            \(staticKeys.joined(separator: "\n"))
            \(clients)
              \(CatalogueBackend.googleIAM.provider):
                backend:
                  type: google-iam
                  credentialsFile: \(runtimeKeyFile)
                  serviceAccounts:
            \(iamAccounts.joined(separator: "\n"))
                  endpoints:
                    iamCredentials: \(google)
                    publicKeys: \(google)/service_accounts/v1/jwk/{serviceAccount}
                    oauthToken: \(google)/token
            \(clients)
              \(CatalogueBackend.upstreamHTTP.provider):
                backend:
                  type: upstream-http
                  url: \(upstream)/token
                  method: POST
                  tokenTypes: [\(typeList)]
                  timeouts: { connect: 10s, total: 30s }
                  verify:
            \(upstreamVerify.joined(separator: "\n"))
            \(clients)
              \(CatalogueBackend.file.provider):
                backend:
                  type: file
                  path: tokens.json
                  verify:
            \(fileVerify.joined(separator: "\n"))
            \(clients)
            """)
    }

    /// The token file: for each context, a token its type's account signed now, filed where the file format puts it
    /// (type → ID → token; a trusted driver's vehicle → task; delivery-consumer's `tracking` and `task`; a batch's
    /// comma-separated IDs; a whole-fleet type's token as its value).
    private static func tokenFile(contexts: [TokenContext], accounts: [TokenType: ServiceAccountKey]) throws -> [UInt8] {
        var file = JSONObject()
        for context in contexts {
            let token = try TenantTokenServer.token(for: context, signedBy: try #require(accounts[context.tokenType]))
            file = inserting(.string(token), at: filePath(of: context)[...], into: file)
        }
        return JSON.serialize(.object(file))
    }

    private static func filePath(of context: TokenContext) -> [String] {
        switch context {
        case .trip(let id), .vehicle(let id), .deliveryVehicle(let id): [context.tokenType.rawValue, id.rawValue]
        case .trustedDeliveryVehicle(let id, let task): [context.tokenType.rawValue, id.rawValue, task.rawValue]
        case .tracking(let id): [context.tokenType.rawValue, "tracking", id.rawValue]
        case .task(let id): [context.tokenType.rawValue, "task", id.rawValue]
        case .tasks(let list): [context.tokenType.rawValue, list.ids.map(\.rawValue).joined(separator: ",")]
        case .fleetReader, .deliveryFleetReader, .fleet: [context.tokenType.rawValue]
        }
    }

    private static func inserting(_ value: JSONValue, at path: ArraySlice<String>, into object: JSONObject) -> JSONObject {
        guard let key = path.first else { return object }
        var object = object
        object[key] = path.count == 1 ? value : .object(inserting(value, at: path.dropFirst(), into: object[key]?.objectValue ?? [:]))
        return object
    }

    /// Every provider answers `/readyz/providers/{id}` 200: google-iam has its access token and each account's keys,
    /// upstream-http the tenant server's key sets.
    private static func waitUntilEveryProviderIsReady(_ gateway: RunningGateway) async throws {
        let admin = RunningGateway.Endpoint(baseURL: gateway.adminURL)
        for backend in CatalogueBackend.allCases {
            var last = ""
            for attempt in 0... {
                let response = try await admin.get("/readyz/providers/\(backend.provider)")
                if response.status == 200 { break }
                last = response.text
                try #require(attempt < 1200, "\(backend.provider) never became ready: \(last)")
                try await Task.sleep(for: .milliseconds(50))
            }
        }
    }
}
