import OutboundHTTP
import TokenGateCore

/// A provider's `upstream-http` backend section, validated. Built only by the factory; the backend only reads it.
struct UpstreamSettings: Sendable {
    /// `GET` sends everything in the URL; `POST` also sends a JSON body.
    enum Method: String, Sendable, CaseIterable {
        case get = "GET"
        case post = "POST"
    }

    var url: UpstreamURL
    var method: Method = .get
    /// Extra request headers; values may carry secrets from `${ENV}` and are never logged.
    var headers: [(name: String, value: String)] = []
    var tokenTypes: Set<TokenType>
    var response = UpstreamResponseMapping()
    /// One attempt's limit for connecting and receiving the response status and headers.
    var connectTimeout: Duration = .seconds(2)
    /// The limit for the whole call: every attempt, every backoff, every body byte.
    var totalTimeout: Duration = .seconds(5)
    var retries = UpstreamSettings.defaultRetries
    var maxBodyBytes = 65_536
    /// The keys the gateway verifies this upstream's tokens with.
    var verify: [BoundKeySource]
    /// The accounts that may sign each token type (`verify:` entries' `tokenTypes`): a token of another is refused.
    var signers: [TokenType: Set<String>] = [:]

    /// Headers the HTTP client owns; configuring them would only confuse the framing.
    static let reservedHeaders: Set<String> = ["host", "content-length", "transfer-encoding", "connection", "content-type"]

    static func parse(_ section: ConfigNode) throws -> UpstreamSettings {
        let mapping = try section.mapping(allowedKeys: [
            "type", "url", "method", "headers", "tokenTypes", "response", "timeouts", "retries", "maxBodyBytes", "verify",
        ])
        let urlNode = try mapping.required("url")
        let url: UpstreamURL
        do { url = try UpstreamURL(parsing: try urlNode.nonEmptyString()) } catch let error as URLTemplateError {
            throw urlNode.error(error.message)
        }
        if url.isPlainHTTPToAnotherHost {
            urlNode.warn("plain http to another host: tokens and header secrets would cross the network unencrypted; use https://")
        }
        let verifyNode = try mapping.required("verify")
        var settings = UpstreamSettings(
            url: url,
            tokenTypes: try parseTokenTypes(try mapping.required("tokenTypes")),
            verify: try BoundKeySource.parseList(verifyNode, allowsURLs: true, bindingTokenTypes: true)
        )
        settings.signers = try BoundKeySource.signers(verifyNode, of: settings.verify, issuing: settings.tokenTypes)
        if let node = mapping.optional("method") {
            let text = try node.string()
            guard let method = Method(rawValue: text) else { throw node.error("expected GET or POST, got '\(text)'") }
            settings.method = method
        }
        if let node = mapping.optional("headers") { settings.headers = try parseHeaders(node) }
        if let node = mapping.optional("response") { settings.response = try UpstreamResponseMapping.parse(node) }
        if let node = mapping.optional("timeouts") { try settings.parseTimeouts(node) }
        if let node = mapping.optional("retries") { settings.retries = try Self.parseRetries(node) }
        if let node = mapping.optional("maxBodyBytes") { settings.maxBodyBytes = try node.int(in: 256...1_048_576) }
        return settings
    }

    private static func parseTokenTypes(_ node: ConfigNode) throws -> Set<TokenType> {
        var types: Set<TokenType> = []
        let items = try node.sequence()
        guard !items.isEmpty else { throw node.error("list at least one token type") }
        for item in items {
            let text = try item.string()
            guard let type = TokenType(rawValue: text) else {
                throw item.error("unknown token type; expected one of: \(TokenType.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            guard types.insert(type).inserted else { throw item.error("listed twice") }
        }
        return types
    }

    private static func parseHeaders(_ node: ConfigNode) throws -> [(name: String, value: String)] {
        var headers: [(name: String, value: String)] = []
        for (name, valueNode) in try node.entries() {
            guard !name.isEmpty, name.utf8.allSatisfy(isTokenByte) else { throw valueNode.error("not a valid header name") }
            guard !reservedHeaders.contains(name.lowercased()) else { throw valueNode.error("this header is set by the client") }
            let value = try valueNode.string()
            // CR or LF in a value would split the request: header injection.
            guard value.utf8.allSatisfy({ $0 == 0x09 || ($0 >= 0x20 && $0 != 0x7F) }) else {
                throw valueNode.error("header values must not contain control characters")
            }
            headers.append((name, value))
        }
        return headers
    }

    private mutating func parseTimeouts(_ node: ConfigNode) throws {
        let mapping = try node.mapping(allowedKeys: ["connect", "total"])
        if let connect = mapping.optional("connect") {
            connectTimeout = try connect.duration()
            guard connectTimeout > .zero, connectTimeout <= .seconds(60) else { throw connect.error("must be between 1ms and 60s") }
        }
        if let total = mapping.optional("total") {
            totalTimeout = try total.duration()
            guard totalTimeout > .zero, totalTimeout <= .seconds(120) else { throw total.error("must be between 1ms and 120s") }
        }
        guard connectTimeout <= totalTimeout else {
            throw (mapping.optional("connect") ?? node).error("the connect timeout must not exceed the total timeout")
        }
    }

    // RFC 9110 token characters.
    private static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            true
        default:
            "!#$%&'*+-.^_`|~".utf8.contains(byte)
        }
    }
}
