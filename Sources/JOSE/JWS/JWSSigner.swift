/// Signs compact JWS/JWT. Checks once, at init, that the key is private (its algorithm binding was checked when
/// the key was loaded).
public struct JWSSigner: Sendable {
    /// The private key and, through it, the algorithm.
    public let key: JWSKey

    /// Refuses a public key with `not_a_private_key`.
    public init(key: JWSKey) throws {
        guard key.isPrivate else { throw JWSKeyError(.notPrivate, "A public \(key.summary) key cannot sign.") }
        self.key = key
    }

    /// A compact JWT. Header: `{"alg":…,"typ":"JWT","kid":…}` (kid if the key has one) plus `extraHeader`
    /// members, which may replace `typ` or `kid` (with a string) but never `alg`, and never add `crit`. Payload:
    /// the claims JSON.
    public func sign(claims: JSONObject, extraHeader: JSONObject = JSONObject()) throws -> String {
        var header = JSONObject()
        header["alg"] = .string(key.algorithm.rawValue)
        header["typ"] = "JWT"
        if let keyID = key.keyID { header["kid"] = .string(keyID) }
        for (name, value) in extraHeader {
            switch name {
            case "alg" where value != .string(key.algorithm.rawValue):
                throw JWSKeyError(.algorithmMismatch, "The header alg must be the key's \(key.algorithm).")
            case "crit":
                throw JWSKeyError(.malformedKey, "\"crit\" headers are not supported (verifiers here reject them).")
            case "kid" where value.stringValue == nil, "typ" where value.stringValue == nil:
                // Verifiers (this one included) refuse a non-string kid; a token nobody accepts is a bug here.
                throw JWSKeyError(.malformedKey, "The \"\(name)\" header must be a string.")
            default:
                header[name] = value
            }
        }
        return try sign(headerJSON: JSON.serialize(.object(header)), payload: JSON.serialize(.object(claims)))
    }

    /// Low level, for known-answer tests: the exact header and payload bytes, base64url-encoded as given.
    public func sign(headerJSON: [UInt8], payload: [UInt8]) throws -> String {
        var signingInput = Base64URL.encode(headerJSON) + "." + Base64URL.encode(payload)
        // Signs the String's own UTF-8 storage in place: no copy of the signing input per token.
        let signature = try signingInput.withUTF8 { input throws(JWSKeyError) in
            try key.signature(forBytes: UnsafeRawBufferPointer(input))
        }
        let encodedSignature = Base64URL.encode(signature)
        // Exactly sized: a gateway caches the token for up to an hour, and `+` would leave it room to grow.
        let count = signingInput.utf8.count + 1 + encodedSignature.utf8.count
        return String(unsafeUninitializedCapacity: count) { output in
            // Each `initialize` returns the index after what it wrote.
            let dot = output.initialize(fromContentsOf: signingInput.utf8)
            output[dot] = UInt8(ascii: ".")
            return output[(dot + 1)...].initialize(fromContentsOf: encodedSignature.utf8)
        }
    }
}
