import AsyncHTTPClient
import Logging
import Testing
import TokenGateCore

@testable import UpstreamTokenServer

/// Configuration mistakes fail at load, located at file:line:col and key path.
@Suite struct UpstreamConfigTests {
    struct Mistake: Sendable, CustomStringConvertible {
        var description: String
        var url = "http://127.0.0.1:9/token?trip={tripId}"
        var extra = ""
        var keyPath: String
        var message: String
    }

    static let mistakes: [Mistake] = [
        Mistake(description: "not http", url: "ftp://tokens.acme.example/{tripId}", keyPath: "backend.url", message: "http"),
        Mistake(
            description: "unknown placeholder", url: "https://tokens.acme.example/{tripID}", keyPath: "backend.url",
            message: "unknown placeholder '{tripID}'"),
        Mistake(description: "placeholder in host", url: "https://{providerId}.acme.example/t", keyPath: "backend.url", message: "path and query"),
        Mistake(description: "placeholder in port", url: "https://tokens.acme.example:{tripId}/t", keyPath: "backend.url", message: "path and query"),
        Mistake(description: "unterminated placeholder", url: "https://tokens.acme.example/{tripId", keyPath: "backend.url", message: "unterminated"),
        Mistake(description: "credentials in URL", url: "https://user:pw@tokens.acme.example/t", keyPath: "backend.url", message: "credentials"),
        Mistake(description: "unknown key", extra: "  retry: { maxAttempts: 2 }", keyPath: "backend.retry", message: "unknown key"),
        Mistake(description: "unknown method", extra: "  method: PUT", keyPath: "backend.method", message: "GET or POST"),
        Mistake(
            description: "reserved header", extra: "  headers: { Host: evil.example }", keyPath: "backend.headers.Host", message: "set by the client"),
        Mistake(
            description: "header injection", extra: #"  headers: { X-Key: "a\r\nX-Evil: 1" }"#, keyPath: "backend.headers.X-Key",
            message: "control characters"),
        Mistake(
            description: "expiry key without format", extra: "  response: { expiryKey: exp }", keyPath: "backend.response.expiryKey",
            message: "expiryFormat"),
        Mistake(
            description: "unknown expiry format", extra: "  response: { expiryKey: exp, expiryFormat: minutes }",
            keyPath: "backend.response.expiryFormat", message: "unknown expiry format"),
        Mistake(
            description: "connect beyond total", extra: "  timeouts: { connect: 3s, total: 2s }", keyPath: "backend.timeouts.connect",
            message: "must not exceed"),
        Mistake(
            description: "too many attempts", extra: "  retries: { maxAttempts: 50 }", keyPath: "backend.retries.maxAttempts",
            message: "between 1 and 10"),
        Mistake(description: "body cap too large", extra: "  maxBodyBytes: 100000000", keyPath: "backend.maxBodyBytes", message: "between"),
    ]

    static func yaml(url: String, extra: String, tokenTypes: String = "[consumer]", verify: Bool = true) -> String {
        """
        backend:
          type: upstream-http
          url: \(url)
          tokenTypes: \(tokenTypes)
        \(extra)
        \(verify ? "  verify:\n    - jwksUrl: https://keys.acme.example/jwks.json\n      serviceAccount: signer@acme.iam.gserviceaccount.com" : "")
        """
    }

    static func load(_ yaml: String) async throws {
        let client = HTTPClient.shared
        let root = try ConfigNode.parse(Array(yaml.utf8), file: ConfigFile(path: "/etc/tokengate/config.yaml", environment: [:]))
        let section = try #require(try root.entries().first?.node)
        let clock = TokenGateClock(wallSeconds: { 0 }, monotonicNanoseconds: { 0 })
        _ = try await UpstreamTokenServerFactory(httpClient: client).makeBackend(
            BackendContext(provider: UpstreamFixture.provider, section: section, audience: "aud", clock: clock, logger: .init(label: "t"))
        )
    }

    @Test(arguments: mistakes)
    func mistakesFailAtLoadWithTheirLocation(_ mistake: Mistake) async throws {
        let error = await #expect(throws: ConfigError.self) {
            try await Self.load(Self.yaml(url: mistake.url, extra: mistake.extra))
        }
        #expect(error?.keyPath == mistake.keyPath)
        #expect(error?.message.contains(mistake.message) == true, "\(String(describing: error))")
        #expect(error?.description.hasPrefix("/etc/tokengate/config.yaml:") == true)
        #expect(error?.mark != nil)
    }

    @Test func theURLErrorPointsAtItsLine() async throws {
        let error = await #expect(throws: ConfigError.self) {
            try await Self.load(Self.yaml(url: "https://tokens.acme.example/{vehicleID}", extra: ""))
        }
        #expect(error?.description.hasPrefix("/etc/tokengate/config.yaml:3:8: backend.url: unknown placeholder") == true)
    }

    @Test func verifyIsRequiredAndTokenTypesMustBeKnown() async throws {
        let missing = await #expect(throws: ConfigError.self) {
            try await Self.load(Self.yaml(url: "https://t.example/x", extra: "", verify: false))
        }
        #expect(missing?.keyPath == "backend.verify")
        let unknown = await #expect(throws: ConfigError.self) {
            try await Self.load(Self.yaml(url: "https://t.example/x", extra: "", tokenTypes: "[consumer, rider]"))
        }
        #expect(unknown?.keyPath == "backend.tokenTypes[1]")
    }

    /// A key that is not bound to a service account would accept a token with anyone's `iss`.
    @Test func everyVerificationKeyMustNameTheServiceAccountItSignsFor() async throws {
        let yaml = """
            backend:
              type: upstream-http
              url: https://t.example/x
              tokenTypes: [consumer]
              verify:
                - jwksUrl: https://keys.acme.example/jwks.json
            """
        let error = await #expect(throws: ConfigError.self) { try await Self.load(yaml) }
        #expect(
            error?.description.hasPrefix("/etc/tokengate/config.yaml:6:7: backend.verify[0]: missing required key 'serviceAccount'") == true,
            "\(String(describing: error))")
    }

    @Test func aFullExampleLoads() async throws {
        try await Self.load(
            Self.yaml(
                url: "https://tokens.acme.example/{providerId}/{tokenType}?trip={tripId}&vehicle={vehicleId}",
                extra: """
                      method: POST
                      headers: { X-Api-Key: literal-for-test }
                      response: { tokenKey: jwt, expiryKey: expirationTimestamp, expiryFormat: epoch-milliseconds }
                      timeouts: { connect: 2s, total: 5s }
                      retries: { maxAttempts: 3, initialBackoff: 100ms, maxBackoff: 2s }
                      maxBodyBytes: 65536
                    """,
                tokenTypes: "[consumer, driver]"
            )
        )
    }
}
