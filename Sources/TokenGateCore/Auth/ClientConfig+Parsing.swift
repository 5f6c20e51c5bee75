import Foundation
import YAML
import JOSE

extension ClientConfig {
    static let keys: Set<String> = ["name", "type", "keySha256", "jwksFile", "issuer", "audience", "allow", "revoked"]

    /// Parses one entry of a provider's `clients:` list.
    static func parse(_ node: ConfigNode, leeway: Int64) throws -> ClientConfig {
        let mapping = try node.mapping(allowedKeys: keys)
        let name = try mapping.required("name").nonEmptyString()
        let typeNode = try mapping.required("type")
        let credential: Credential
        switch try typeNode.string() {
        case "api-key":
            try rejectKeys(["jwksFile", "issuer", "audience"], in: mapping, for: "api-key")
            credential = .apiKey(sha256: try parseDigest(mapping.required("keySha256")))
        case "jwt":
            try rejectKeys(["keySha256"], in: mapping, for: "jwt")
            credential = .jwt(try parseSessionSettings(mapping, leeway: leeway))
        case let other:
            throw typeNode.error("unknown client type '\(other)'; expected api-key or jwt")
        }
        let allow = try parseAllow(mapping.required("allow"), credential: credential)
        let isRevoked = try mapping.optional("revoked")?.bool() ?? false
        return ClientConfig(name: name, credential: credential, allow: allow, isRevoked: isRevoked)
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
        let jwksNode = try mapping.required("jwksFile")
        let keys: JWKSet
        do {
            keys = try JWKSet(json: try jwksNode.fileContents())
        } catch let error as ConfigError {
            throw error
        } catch {
            throw jwksNode.error("not a usable JWKS: \(error)")
        }
        let issuer = try mapping.required("issuer").nonEmptyString()
        let audienceNode = try mapping.required("audience")
        let audiences: [String]
        if audienceNode.yaml.sequence != nil {
            audiences = try audienceNode.stringList()
        } else {
            audiences = [try audienceNode.nonEmptyString()]
        }
        guard !audiences.isEmpty else { throw audienceNode.error("name at least one audience") }
        return SessionTokenSettings(keys: keys, issuer: issuer, audiences: audiences, leeway: leeway)
    }

    private static func parseAllow(_ node: ConfigNode, credential: Credential) throws -> [TokenType: Grant] {
        var allow: [TokenType: Grant] = [:]
        for (key, value) in try node.entries() {
            guard let type = TokenType(rawValue: key) else {
                throw value.error("unknown token type; expected one of: \(TokenType.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            let grant: Grant
            if value.yaml.scalar != nil {
                guard try value.string() == "any" else { throw value.error("expected 'any' or { claim: NAME }") }
                grant = .anyContext
            } else {
                grant = .claim(try value.mapping(allowedKeys: ["claim"]).required("claim").nonEmptyString())
            }
            switch (credential, type, grant) {
            case (.jwt, .server, _):
                throw value.error("server tokens open the whole fleet and are never vended to a jwt client")
            case (.jwt, _, .anyContext):
                throw value.error("a jwt client must name the session-token claim that lists its contexts: { claim: NAME }")
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
