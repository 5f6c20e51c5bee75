import JOSE
import OpenSSLPrimitives
import YAML

extension ClientConfig {
    static let keys: Set<String> = [
        "name", "type", "keySha256", "jwksFile", "jwksUrl", "refreshInterval", "issuer", "audience", "allow", "revoked",
        "requiredForReadiness", "allowServerTokens", "allowAllTasks", "authorizer",
    ]

    /// Parses one entry of a provider's `clients:` list.
    static func parse(_ node: ConfigNode, leeway: Int64) throws -> ClientConfig {
        let mapping = try node.mapping(allowedKeys: keys)
        let name = try mapping.required("name").nonEmptyString()
        let typeNode = try mapping.required("type")
        let credential: Credential
        switch try typeNode.string() {
        case "api-key":
            try rejectKeys(["jwksFile", "jwksUrl", "refreshInterval", "issuer", "audience", "requiredForReadiness"], in: mapping, for: "api-key")
            credential = .apiKey(sha256: try parseDigest(mapping.required("keySha256")))
        case "jwt":
            try rejectKeys(["keySha256"], in: mapping, for: "jwt")
            credential = .jwt(try parseSessionSettings(mapping, leeway: leeway))
        case let other:
            throw typeNode.error("unknown client type '\(other)'; expected api-key or jwt")
        }
        let authorizerNode = mapping.optional("authorizer")
        let authorizer = try authorizerNode.map(AuthorizerSettings.parse)
        let allowNode = try mapping.required("allow")
        let allow = try parseAllow(allowNode, credential: credential, hasAuthorizer: authorizer != nil)
        if let authorizer, let authorizerNode { authorizer.warnAboutMissingContext(for: allow.keys, in: authorizerNode) }
        let isRevoked = try mapping.optional("revoked")?.bool() ?? false
        // Both switches say yes twice: in `allow` and here, so one stray line cannot open a fleet.
        let allowServerTokens = try mapping.optional("allowServerTokens")?.bool() ?? false
        if allow[.server] != nil, !allowServerTokens {
            throw allowNode.error(
                "server tokens open the whole on-demand fleet; a client that needs them must also say allowServerTokens: true "
                    + "(Google recommends Application Default Credentials for backends instead)")
        }
        if allowServerTokens, allow[.server] == nil, let node = mapping.optional("allowServerTokens") {
            throw node.error("allowServerTokens without `server: whole-fleet` in allow does nothing; remove it or grant server")
        }
        if allowServerTokens, let node = mapping.optional("allowServerTokens") {
            node.warn(
                "client \(name) may have server tokens (all wildcards: a leaked one opens the whole fleet); Google recommends "
                    + "that backends call Fleet Engine with Application Default Credentials instead of JWTs")
        }
        var allowsAllTasks = false
        if let node = mapping.optional("allowAllTasks") {
            allowsAllTasks = try node.bool()
            if allowsAllTasks, allow[.trustedDeliveryDriver] == nil {
                throw node.error("allowAllTasks is for trusted-delivery-driver tokens; this client is not allowed them")
            }
        }
        return ClientConfig(
            name: name, credential: credential, allow: allow, isRevoked: isRevoked, allowsAllTasks: allowsAllTasks, authorizer: authorizer)
    }

    private static func rejectKeys(_ names: [String], in mapping: ConfigMapping, for type: String) throws {
        for name in names {
            if let node = mapping.optional(name) { throw node.error("not allowed for a \(type) client") }
        }
    }

    private static func parseDigest(_ node: ConfigNode) throws -> [UInt8] {
        let hex = try node.string().lowercased()
        guard hex.utf8.count == 64, let digest = HexBytes.decode(hex) else {
            throw node.error("expected the 64 hex characters of the key's SHA-256 digest (tokengate hash-api-key)")
        }
        return digest
    }

    private static func parseSessionSettings(_ mapping: ConfigMapping, leeway: Int64) throws -> SessionTokenSettings {
        let keySource = try parseKeySource(mapping)
        let issuer = try mapping.required("issuer").nonEmptyString()
        let audienceNode = try mapping.required("audience")
        let audiences: [String]
        if audienceNode.yaml.sequence != nil {
            audiences = try audienceNode.stringList()
        } else {
            audiences = [try audienceNode.nonEmptyString()]
        }
        guard !audiences.isEmpty else { throw audienceNode.error("name at least one audience") }
        let requiredForReadiness = try mapping.optional("requiredForReadiness")?.bool() ?? true
        return SessionTokenSettings(
            keySource: keySource, issuer: issuer, audiences: audiences, leeway: leeway, requiredForReadiness: requiredForReadiness)
    }

    /// Exactly one of `jwksFile` (read now) and `jwksUrl` (fetched only once the gateway runs: parsing the
    /// configuration never touches the network).
    private static func parseKeySource(_ mapping: ConfigMapping) throws -> KeySource {
        let intervalNode = mapping.optional("refreshInterval")
        switch (mapping.optional("jwksFile"), mapping.optional("jwksUrl")) {
        case (let fileNode?, nil):
            if let intervalNode { throw intervalNode.keyError("only for a jwksUrl client: a jwksFile is read once, at load") }
            return .fixed(try parseKeyFile(fileNode))
        case (nil, let urlNode?):
            return .url(try JWKSURL.parse(urlNode, refreshInterval: intervalNode))
        case (_?, let urlNode?):
            throw urlNode.keyError("give either jwksFile or jwksUrl, not both")
        case (nil, nil):
            throw mapping.node.error("a jwt client needs the identity provider's keys: jwksFile or jwksUrl")
        }
    }

    private static func parseKeyFile(_ node: ConfigNode) throws -> JWKSet {
        do {
            return try JWKSet(json: try node.fileContents())
        } catch let error as ConfigError {
            throw error
        } catch {
            throw node.error("not a usable JWKS: \(error)")
        }
    }

    private static func parseAllow(_ node: ConfigNode, credential: Credential, hasAuthorizer: Bool) throws -> [TokenType: Grant] {
        var allow: [TokenType: Grant] = [:]
        for (key, value) in try node.entries() {
            guard let type = TokenType(rawValue: key) else {
                throw value.keyError("unknown token type; expected one of: \(TokenType.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            let grant: Grant
            if value.yaml.scalar != nil {
                switch try value.string() {
                case "any": grant = .anyContext
                case "whole-fleet": grant = .wholeFleet
                default: throw value.error("expected 'any', 'whole-fleet' or { claim: NAME }")
                }
            } else {
                grant = .claim(try value.mapping(allowedKeys: ["claim"]).required("claim").nonEmptyString())
            }
            switch (credential, type, grant) {
            case (.jwt, .server, _):
                throw value.error("server tokens open the whole fleet and are never vended to a jwt client")
            case (_, _, .wholeFleet) where !type.isWholeFleet:
                throw value.error("'whole-fleet' is only for fleet-reader, delivery-fleet-reader and server tokens")
            case (_, _, _) where type.isWholeFleet && grant != .wholeFleet:
                throw value.error("\(type) tokens are wildcards over the whole fleet and are granted only by name: '\(type): whole-fleet'")
            case (.jwt, _, .anyContext) where !hasAuthorizer:
                throw value.error(
                    "a jwt client must name the session-token claim that lists its contexts ({ claim: NAME }), or have an authorizer")
            case (.apiKey, _, .claim):
                throw value.error("an api-key client has no claims; use 'any'")
            default:
                allow[type] = grant
            }
        }
        guard !allow.isEmpty else { throw node.error("allow at least one token type") }
        return allow
    }
}
