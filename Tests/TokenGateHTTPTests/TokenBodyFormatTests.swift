import JOSE
import Testing
import TokenGateCore
import TokenGateCoreTesting
import TokenGateHTTP

@Suite struct TokenBodyFormatTests {
    static let token = DeliveredToken(compact: "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln-_", issuedAt: 1_700_000_000, expiresAt: 1_700_003_600)

    static func provider(response: String? = nil) throws -> ProviderSettings {
        let text = ProviderYAML.config(
            ProviderYAML(
                "acme-rides", settings: response.map { ["response: \($0)"] } ?? [], backend: .flow("{ type: static-key }"),
                clients: [ProviderYAML.apiKey("backend", .dispatch)]))
        let configuration = try ConfigurationParser().parse(ConfigNode.parse(Array(text.utf8), file: ConfigFile(path: "c.yaml", environment: [:])))
        return try #require(configuration.providers.first?.value)
    }

    /// The body as the gateway first built it per request: a JSON object, serialized.
    static func reference(_ token: DeliveredToken, _ context: TokenContext, _ provider: ProviderSettings, now: Int64) -> [UInt8] {
        var body = JSONObject()
        if let mapping = provider.response {
            body[mapping.tokenKey] = .string(token.compact)
            body[mapping.expiryKey] = .integer(mapping.expiryFormat.value(expiresAt: token.expiresAt, now: now))
        }
        let standard: [(String, JSONValue)] = [
            ("token", .string(token.compact)),
            ("tokenType", .string(context.tokenType.rawValue)),
            ("providerId", .string(provider.id.rawValue)),
            ("context", .object(context.jsonObject)),
            ("issuedAt", .integer(token.issuedAt)),
            ("expiresAt", .integer(token.expiresAt)),
            ("expiresIn", .integer(max(0, token.expiresAt - now))),
            ("refreshAfter", .integer(max(token.issuedAt, token.expiresAt - provider.cache.refreshBefore.components.seconds))),
        ]
        for (key, value) in standard where body[key] == nil { body[key] = value }
        return JSON.serialize(.object(body))
    }

    @Test(arguments: [
        nil,
        "{ tokenKey: jwt, expiryKey: expirationTimestamp, expiryFormat: epoch-milliseconds }",
        "{ tokenKey: TRIP_TOKEN_KEY, expiryKey: TOKEN_EXPIRATION, expiryFormat: seconds-from-now }",
        "{ tokenKey: token, expiryKey: expiresIn, expiryFormat: epoch-seconds }",
        "{ tokenKey: expiresAt, expiryKey: token, expiryFormat: seconds-from-now }",
    ])
    func rendersTheSameBytesAsSerializingTheResponseObject(response: String?) throws {
        let provider = try Self.provider(response: response)
        let format = TokenBodyFormat(provider: provider)
        for context in try Self.everyKindOfContext() {
            // Fresh, nine seconds left, and past expiry (0, never negative).
            for now in [Self.token.issuedAt, Self.token.expiresAt - 9, Self.token.expiresAt + 50] {
                let expected = Self.reference(Self.token, context, provider, now: now)
                #expect(format.bytes(of: Self.token, context: context, now: now) == expected, "\(String(decoding: expected, as: UTF8.self))")
                #expect(format.byteCount(of: Self.token, context: context, now: now) == expected.count)
            }
        }
    }

    @Test func escapesATokenThatIsNotPlainText() throws {
        let provider = try Self.provider()
        let token = DeliveredToken(compact: "a\"b\\c\nd", issuedAt: 10, expiresAt: 20)
        let format = TokenBodyFormat(provider: provider)
        #expect(!token.isJSONSafe)
        #expect(format.bytes(of: token, context: .fleet, now: 15) == Self.reference(token, .fleet, provider, now: 15))
        #expect(format.byteCount(of: token, context: .fleet, now: 15) == Self.reference(token, .fleet, provider, now: 15).count)
    }

    @Test func aHostileExpiryDoesNotTrap() throws {
        let provider = try Self.provider(response: "{ tokenKey: jwt, expiryKey: expirationTimestamp, expiryFormat: epoch-milliseconds }")
        let format = TokenBodyFormat(provider: provider)
        for (issuedAt, expiresAt) in [(Int64.min, Int64.max), (Int64.max, Int64.min), (0, Int64.max / 999)] {
            let token = DeliveredToken(compact: "a.b.c", issuedAt: issuedAt, expiresAt: expiresAt)
            let bytes = format.bytes(of: token, context: .fleet, now: 1_700_000_000)
            #expect(bytes.count == format.byteCount(of: token, context: .fleet, now: 1_700_000_000))
            #expect(try JSON.parse(bytes).objectValue?["jwt"] == .string("a.b.c"))
        }
    }

    /// One context of every shape a body can carry: one ID, a vehicle and its task (or every task), a task list,
    /// none; and each with IDs that need escaping.
    static func everyKindOfContext() throws -> [TokenContext] {
        let id = { (raw: String) throws -> ContextID in try #require(ContextID(raw)) }
        return [
            .trip(try id("trip-1")), .vehicle(try id("v_2")), .deliveryVehicle(try id("dv.3")),
            .trustedDeliveryVehicle(try id("dv-4"), task: .one(try id("task~5"))), .trustedDeliveryVehicle(try id("dv-4"), task: .all),
            .tracking(try id("track@6")), .task(try id("t+7=")),
            .tasks(try TaskIDList([try id("a"), try id("b-2"), try id("c")])), .tasks(try TaskIDList([try id("only")])),
            .fleetReader, .deliveryFleetReader, .fleet,
            // Fleet Engine's IDs may hold what JSON escapes (`"`, `\`, controls) and any letter, which it does not.
            .trip(try id("q\"uote\\ \n\u{1}")), .vehicle(try id("caf\u{E9} \u{1F695}")),
            .trustedDeliveryVehicle(try id("v\"1"), task: .one(try id("t\\2"))), .trustedDeliveryVehicle(try id("v\t"), task: .all),
            .tasks(try TaskIDList([try id("a\""), try id("\u{E9}"), try id("\u{7}")])),
        ]
    }
}
