import JOSE
import Testing
import TokenGateCore
import TokenGateHTTP

@Suite struct RenderedTokenBodyTests {
    static let token = DeliveredToken(compact: "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln-_", issuedAt: 1_700_000_000, expiresAt: 1_700_003_600)

    static func provider(response: String? = nil) throws -> ProviderSettings {
        let responseLine = response.map { "    response: \($0)\n" } ?? ""
        let text = """
            providers:
              acme-rides:
                backend: { type: static-key }
                clients:
                  - { name: backend, type: api-key, keySha256: 9ae4a3e2a48a06ab46007841990560acb1408babd4b1965ebe237cfec90382b6, allow: { consumer: any } }

            """ + responseLine
        let configuration = try ConfigurationParser().parse(ConfigNode.parse(Array(text.utf8), file: ConfigFile(path: "c.yaml", environment: [:])))
        return try #require(configuration.providers.first?.value)
    }

    /// The body as the gateway built it per request before bodies were rendered once: a JSON object, serialized.
    static func reference(_ token: DeliveredToken, _ context: TokenContext, _ provider: ProviderSettings, now: Int64) -> [UInt8] {
        var body = JSONObject()
        if let mapping = provider.response {
            body[mapping.tokenKey] = .string(token.compact)
            body[mapping.expiryKey] = .integer(mapping.expiryFormat.value(expiresAt: token.expiresAt, now: now))
        }
        var contextObject = JSONObject()
        if let name = context.parameterName, let id = context.id { contextObject[name] = .string(id.rawValue) }
        let standard: [(String, JSONValue)] = [
            ("token", .string(token.compact)),
            ("tokenType", .string(context.tokenType.rawValue)),
            ("providerId", .string(provider.id.rawValue)),
            ("context", .object(contextObject)),
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
        let contexts: [TokenContext] = [.trip(try #require(ContextID("trip-1"))), .fleet]
        for context in contexts {
            let body = RenderedTokenBody(token: Self.token, context: context, provider: provider)
            // Fresh, nine seconds left, and past expiry (0, never negative).
            for now in [Self.token.issuedAt, Self.token.expiresAt - 9, Self.token.expiresAt + 50] {
                let expected = Self.reference(Self.token, context, provider, now: now)
                #expect(body.bytes(now: now) == expected, "\(String(decoding: expected, as: UTF8.self))")
                #expect(body.byteCount(now: now) == expected.count)
            }
        }
    }

    @Test func escapesATokenThatIsNotPlainText() throws {
        let provider = try Self.provider()
        let token = DeliveredToken(compact: "a\"b\\c\nd", issuedAt: 10, expiresAt: 20)
        let body = RenderedTokenBody(token: token, context: .fleet, provider: provider)
        #expect(body.bytes(now: 15) == Self.reference(token, .fleet, provider, now: 15))
    }
}
