/// A JWKS. Refuses duplicate kids, symmetric keys mixed with asymmetric ones, `use: enc`, and weak or invalid
/// keys — each with a reason.
public struct JWKSet: Sendable {
    /// The keys, in the order given.
    public let keys: [JWSKey]

    /// No keys at all.
    static let empty = JWKSet(checked: [])

    private init(checked keys: [JWSKey]) { self.keys = keys }

    /// A set from loaded keys; refuses duplicate key IDs and symmetric keys mixed with asymmetric ones. Key IDs
    /// are compared code point by code point, as `key(withID:)` looks them up.
    public init(keys: [JWSKey]) throws {
        var seen = Set<ExactText>()
        for keyID in keys.compactMap(\.keyID) where !seen.insert(ExactText(keyID)).inserted {
            throw JWSKeyError(.duplicateKeyID, "Two keys share the key ID \(Sanitized.quote(keyID)).")
        }
        // With both kinds in one set, a public key could end up used as an HMAC secret somewhere.
        let symmetricCount = keys.filter(\.isSymmetric).count
        guard symmetricCount == 0 || symmetricCount == keys.count else {
            throw JWSKeyError(.mixedKeyTypes, "A key set must not mix HMAC secrets with asymmetric keys.")
        }
        self.keys = keys
    }

    /// A set from JWKS JSON (`{"keys":[…]}`); any refused key refuses the whole set. A single JWK (an object with
    /// `kty` and no `keys`) is read as a set of that one key, since operators often hand over one key where a set is
    /// expected. `algorithm` binds members that have no `alg` (as in `JWSKey.jwk(_:algorithm:)`).
    public init(json: [UInt8], algorithm: JWSAlgorithm? = nil) throws {
        guard case .object(let object) = try JWSKey.parseKeyJSON(json) else {
            throw JWSKeyError(.malformedKey, "A JWKS must be a JSON object with a \"keys\" array.")
        }
        if object["keys"] == nil, object["kty"] != nil {
            try self.init(keys: [try JWSKey.jwk(object: object, algorithm: algorithm)])
            return
        }
        guard case .array(let elements)? = object["keys"] else {
            throw JWSKeyError(.malformedKey, "A JWKS must be a JSON object with a \"keys\" array.")
        }
        var keys: [JWSKey] = []
        for (index, element) in elements.enumerated() {
            guard case .object(let member) = element else {
                throw JWSKeyError(.malformedKey, "JWKS entry \(index) is not a JSON object.")
            }
            do {
                keys.append(try JWSKey.jwk(object: member, algorithm: algorithm))
            } catch {
                throw JWSKeyError(error.reason, "JWKS entry \(index): \(error.message)", openSSLError: error.openSSLError)
            }
        }
        try self.init(keys: keys)
    }

    /// The key with this exact key ID (same code points: RFC 7515 section 4.1.4 makes `kid` a case-sensitive
    /// string, and no Unicode normalization applies), or nil (never a default key).
    public func key(withID keyID: String) -> JWSKey? {
        keys.first { $0.keyID?.hasSameCodePoints(as: keyID) == true }
    }

    /// `{"keys":[…]}` with the public JWK of every asymmetric key; HMAC keys are left out.
    public func publicJSON() throws -> [UInt8] {
        var published: [JSONValue] = []
        for key in keys where !key.isSymmetric {
            published.append(.object(try key.publicJWKObject()))
        }
        return JSON.serialize(.object(["keys": .array(published)]))
    }
}
