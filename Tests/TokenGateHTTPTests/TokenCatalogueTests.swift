import Foundation
import JOSE
import OpenSSLPrimitives
import StaticKeySigner
import Testing
import TokenGateCore
import TokenGateTesting

/// The rest of Fleet Engine's token catalogue, end to end: trusted delivery drivers, batch tasks, the two fleet
/// readers and server tokens, each served over HTTP, verified with the published JWKS and the `openssl` command,
/// and refused to every client whose policy does not name it.
@Suite struct TokenCatalogueTests {
    static let depotKey = "depot-key-0123456789abcdef"
    static let handheldKey = "handheld-key-0123456789abcdef"
    static let dashboardKey = "dashboard-key-0123456789abcdef"
    static let opsKey = "ops-backend-key-0123456789abcdef"
    static let plainKey = "plain-key-0123456789abcdef"
    static let issuer = "https://login.acme.test/"

    /// One provider signing every type with its own service account, and one client per kind of grant.
    struct Fixture {
        let directory: TemporaryDirectory
        let clock = ManualClock()
        let identityProvider: JWSKey

        init() throws {
            directory = try TemporaryDirectory()
            identityProvider = try JWSKey.generate(.rs256, keyID: "idp-1")
            _ = try directory.write("idp-jwks.json", try JWKSet(keys: [identityProvider.publicKey()]).publicJSON())
            let digest = { (key: String) in HexBytes.encode(try Digest.sha256(Array(key.utf8))) }
            for (file, json) in try Fixture.serviceAccounts.get() { try directory.write("keys/\(file).json", json) }
            let keys = Fixture.keyFiles.map { type, file in "        \(type): [{ serviceAccountFile: keys/\(file).json }]" }
            _ = try directory.write(
                "config.yaml",
                """
                providers:
                  acme-delivery:
                    backend:
                      type: static-key
                      keys:
                \(keys.joined(separator: "\n"))
                    clients:
                      - name: depot
                        type: api-key
                        keySha256: \(try digest(TokenCatalogueTests.depotKey))
                        allow: { trusted-delivery-driver: any, batch-tasks: any }
                        allowAllTasks: true
                      - name: handheld
                        type: api-key
                        keySha256: \(try digest(TokenCatalogueTests.handheldKey))
                        allow: { trusted-delivery-driver: any }
                      - name: dashboard
                        type: api-key
                        keySha256: \(try digest(TokenCatalogueTests.dashboardKey))
                        allow: { fleet-reader: whole-fleet, delivery-fleet-reader: whole-fleet }
                      - name: ops-backend
                        type: api-key
                        keySha256: \(try digest(TokenCatalogueTests.opsKey))
                        allow: { server: whole-fleet }
                        allowServerTokens: true
                      - name: plain
                        type: api-key
                        keySha256: \(try digest(TokenCatalogueTests.plainKey))
                        allow: { consumer: any }
                      - name: courier-app
                        type: jwt
                        jwksFile: idp-jwks.json
                        issuer: \(TokenCatalogueTests.issuer)
                        audience: tokengate
                        allow:
                          trusted-delivery-driver: { claim: vans }
                          batch-tasks: { claim: tasks }
                          fleet-reader: whole-fleet
                """
            )
        }

        static let keyFiles: KeyValuePairs = [
            "consumer": "consumer", "trusted-delivery-driver": "trusted", "batch-tasks": "batch", "fleet-reader": "reader",
            "delivery-fleet-reader": "delivery-reader", "server": "server",
        ]

        /// One service account per type, made once per test process: RSA key generation dominates otherwise.
        static let serviceAccounts = Swift.Result(catching: { () throws -> [String: [UInt8]] in
            var files: [String: [UInt8]] = [:]
            for (_, file) in keyFiles {
                let account = try ServiceAccountKey.generate(projectID: "acme-delivery", clientEmail: "\(file)@acme-delivery.iam.gserviceaccount.com")
                files[file] = try account.json()
            }
            return files
        })

        func withGateway<Result: Sendable>(_ body: (RunningGateway) async throws -> Result) async throws -> Result {
            defer { directory.remove() }
            return try await RunningGateway.with(
                configuration: "\(directory.path)/config.yaml", registry: BackendRegistry([StaticKeySignerFactory()]),
                clock: clock.gatewayClock, body)
        }

        func sessionToken(claims extra: JSONObject) throws -> String {
            var claims: JSONObject = [
                "iss": .string(TokenCatalogueTests.issuer), "sub": "courier-1", "aud": "tokengate", "iat": .integer(clock.now),
                "exp": .integer(clock.now + 3600),
            ]
            for (key, value) in extra { claims[key] = value }
            return try JWSSigner(key: identityProvider).sign(claims: claims)
        }

        /// Verifies `token` as Fleet Engine would: the published JWKS, each key bound to its key file's service
        /// account, and the exact claims of `context`.
        func verify(_ token: String, for context: TokenContext, gateway: RunningGateway) async throws -> VerifiedJWT {
            let jwks = try await gateway.get("/v1/providers/acme-delivery/jwks.json")
            var issuers: [String: String] = [:]
            for (_, file) in Fixture.keyFiles {
                let account = try ServiceAccountKey(json: Array(try Data(contentsOf: URL(fileURLWithPath: "\(directory.path)/keys/\(file).json"))))
                issuers[account.privateKeyID] = account.clientEmail
            }
            let keys = VerificationKeys(keySet: try JWKSet(json: jwks.body), issuers: issuers)
            return try FleetEngineVerifier(keys: keys, audience: FleetEngineClaims.defaultAudience).verify(token, for: context, now: clock.now)
        }

        /// Whether the `openssl` command accepts the token's RS256 signature with the published key its kid names.
        func opensslAccepts(_ token: String, gateway: RunningGateway) async throws -> Bool {
            let parts = token.split(separator: ".").map(String.init)
            let kid = try #require(JWTVerifier.decodeUnverified(token).header?["kid"]?.stringValue)
            let jwks = try JWKSet(json: try await gateway.get("/v1/providers/acme-delivery/jwks.json").body)
            let key = try #require(jwks.key(withID: kid))
            let publicKey = try directory.write("pub.pem", try key.publicKeyPEM())
            let signature = try directory.write("sig.bin", try #require(Base64URL.decode(parts[2])))
            let input = try directory.write("input.txt", "\(parts[0]).\(parts[1])")
            let (status, output) = try await ChildProcess.run(
                "openssl", ["dgst", "-sha256", "-verify", publicKey, "-signature", signature, input])
            return status == 0 && output.contains("Verified OK")
        }
    }

    static let wildcard = JSONValue.string("*")

    @Test(arguments: [
        (
            "trusted-delivery-driver", "deliveryVehicleId=van-7&taskId=task-3", depotKey, #"{"deliveryVehicleId":"van-7","taskId":"task-3"}"#,
            #"{"deliveryvehicleid":"van-7","taskid":"task-3"}"#, 3600
        ),
        (
            "trusted-delivery-driver", "deliveryVehicleId=van-7&taskId=*", depotKey, #"{"deliveryVehicleId":"van-7","taskId":"*"}"#,
            #"{"deliveryvehicleid":"van-7","taskid":"*"}"#, 3600
        ),
        (
            "batch-tasks", "taskIds=task-1,task-2%2Ctask-3", depotKey, #"{"taskIds":["task-1","task-2","task-3"]}"#,
            #"{"taskids":["task-1","task-2","task-3"]}"#, 3600
        ),
        (
            "fleet-reader", "", dashboardKey, "{}",
            #"{"tripid":"*","vehicleid":"*","taskid":"*","trackingid":"*","deliveryvehicleid":"*"}"#, 600
        ),
        ("delivery-fleet-reader", "", dashboardKey, "{}", #"{"taskid":"*","trackingid":"*","deliveryvehicleid":"*"}"#, 600),
        ("server", "", opsKey, "{}", #"{"tripid":"*","vehicleid":"*"}"#, 600),
    ])
    func servesEveryNewTypeVerifiedAndExactlyScoped(
        type: String, query: String, key: String, context: String, claim: String, lifetime: Int64
    ) async throws {
        let fixture = try Fixture()
        try await fixture.withGateway { gateway in
            let response = try await gateway.get("/v1/providers/acme-delivery/tokens/\(type)?\(query)", bearer: key)
            #expect(response.status == 200, "\(response.text)")
            let body = response.json
            #expect(body["tokenType"] == .string(type))
            #expect(body["context"] == (try JSON.parse(Array(context.utf8))))
            #expect(body["expiresIn"] == .integer(lifetime))
            let token = try #require(body["token"]?.stringValue)
            // The context is read back from the token itself, as `verify-token` does, then checked exactly.
            let scope = try TokenScope.context(ofUnverified: token)
            #expect(scope.tokenType.rawValue == type)
            let verified = try await fixture.verify(token, for: scope, gateway: gateway)
            #expect(verified.claims["authorization"] == (try JSON.parse(Array(claim.utf8))))
            #expect(verified.expiresAt == fixture.clock.now + lifetime)
            #expect(try await fixture.opensslAccepts(token, gateway: gateway))
        }
    }

    @Test(arguments: [
        // No grant for the type at all.
        ("fleet-reader", "", plainKey),
        ("delivery-fleet-reader", "", plainKey),
        ("server", "", plainKey),
        ("batch-tasks", "taskIds=task-1", plainKey),
        // Granted one whole-fleet type is not granted another.
        ("server", "", dashboardKey),
        ("fleet-reader", "", opsKey),
        // A trusted driver's every-task token needs allowAllTasks.
        ("trusted-delivery-driver", "deliveryVehicleId=van-7&taskId=*", handheldKey),
    ])
    func refusesWildcardsToClientsWithoutAnExplicitGrant(type: String, query: String, key: String) async throws {
        let fixture = try Fixture()
        try await fixture.withGateway { gateway in
            let response = try await gateway.get("/v1/providers/acme-delivery/tokens/\(type)?\(query)", bearer: key)
            #expect(response.status == 403, "\(response.text)")
            #expect(response.errorCode == "forbidden")
            #expect(response.json["token"] == nil)
        }
    }

    @Test func aHandheldGetsOneTaskButNeverEveryTask() async throws {
        let fixture = try Fixture()
        try await fixture.withGateway { gateway in
            let one = try await gateway.get(
                "/v1/providers/acme-delivery/tokens/trusted-delivery-driver?deliveryVehicleId=van-7&taskId=task-3", bearer: Self.handheldKey)
            #expect(one.status == 200, "\(one.text)")
            let every = try await gateway.get(
                "/v1/providers/acme-delivery/tokens/trusted-delivery-driver?deliveryVehicleId=van-7&taskId=%2A", bearer: Self.handheldKey)
            #expect(every.status == 403)
        }
    }

    @Test func sessionTokenCallersGetOnlyWhatTheirClaimsList() async throws {
        let fixture = try Fixture()
        try await fixture.withGateway { gateway in
            let session = try fixture.sessionToken(claims: ["vans": ["van-7"], "tasks": ["task-1", "task-2"]])
            let path = "/v1/providers/acme-delivery/tokens/"
            #expect(try await gateway.get(path + "trusted-delivery-driver?deliveryVehicleId=van-7&taskId=task-9", bearer: session).status == 200)
            #expect(try await gateway.get(path + "trusted-delivery-driver?deliveryVehicleId=van-8&taskId=task-9", bearer: session).status == 403)
            // No allowAllTasks on this client.
            #expect(try await gateway.get(path + "trusted-delivery-driver?deliveryVehicleId=van-7&taskId=*", bearer: session).status == 403)
            #expect(try await gateway.get(path + "batch-tasks?taskIds=task-2,task-1", bearer: session).status == 200)
            // Every task of a batch must be listed, not just one.
            #expect(try await gateway.get(path + "batch-tasks?taskIds=task-1,task-3", bearer: session).status == 403)
            // Named explicitly for this client: a browser dashboard behind the identity provider.
            #expect(try await gateway.get(path + "fleet-reader", bearer: session).status == 200)
            #expect(try await gateway.get(path + "delivery-fleet-reader", bearer: session).status == 403)
        }
    }

    @Test(arguments: [
        ("batch-tasks?taskIds=", "taskIds"),
        ("batch-tasks?taskIds=task-1,task-1", "twice"),
        ("batch-tasks?taskIds=task-1,,task-2", "taskIds"),
        ("batch-tasks?taskIds=task-1,*", "taskIds"),
        ("batch-tasks?taskIds=" + (1...26).map { "t\($0)" }.joined(separator: ","), "1 to 25"),
        ("batch-tasks?taskId=task-1", "needs taskIds"),
        ("trusted-delivery-driver?deliveryVehicleId=van-7", "deliveryVehicleId and taskId"),
        ("trusted-delivery-driver?deliveryVehicleId=*&taskId=*", "deliveryVehicleId"),
        ("fleet-reader?tripId=trip-1", "no context parameter"),
    ])
    func refusesMalformedContextsBeforeAnyCredentialCheck(path: String, reason: String) async throws {
        let fixture = try Fixture()
        try await fixture.withGateway { gateway in
            // No credential at all: the context is judged first, so the answer is 400, not 401.
            let response = try await gateway.get("/v1/providers/acme-delivery/tokens/\(path)")
            #expect(response.status == 400, "\(response.text)")
            #expect(response.errorCode == "invalid_request")
        }
        // The operator's log line says why; the caller only gets the fixed message.
        let type = try #require(TokenType(rawValue: String(path.prefix { $0 != "?" })))
        let parameters = QueryStringForTests.parse(String(path.drop { $0 != "?" }.dropFirst()))
        #expect(throws: ContextError.self) { try TokenContext.parse(type: type, parameters: parameters) }
        do {
            _ = try TokenContext.parse(type: type, parameters: parameters)
        } catch {
            #expect(error.description.contains(reason), "\(error)")
        }
    }
}

/// A plain query-string reader for the tests' own expectations (the gateway's parser is under test elsewhere).
enum QueryStringForTests {
    static func parse(_ query: String) -> [String: String] {
        var parameters: [String: String] = [:]
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let value = parts.count > 1 ? String(parts[1]).removingPercentEncoding ?? String(parts[1]) : ""
            parameters[String(parts[0])] = value
        }
        return parameters
    }
}
