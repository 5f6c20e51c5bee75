extension JWSKey {
    /// One JWK (JSON object bytes): kty RSA (n, e; private: d, p, q, dp, dq, qi), EC (crv P-256/384/521, x, y, d),
    /// OKP (crv Ed25519, x, d) or oct (k). Its "alg" member wins; else `algorithm`; else the key type's default
    /// (an oct key without either is refused). Refuses `"use": "enc"`. "kid" becomes `keyID`.
    public static func jwk(_ json: [UInt8], algorithm: JWSAlgorithm? = nil) throws -> JWSKey {
        guard case .object(let object) = try parseKeyJSON(json) else {
            throw JWSKeyError(.malformedKey, "A JWK must be a JSON object.")
        }
        return try jwk(object: object, algorithm: algorithm)
    }

    static func parseKeyJSON(_ json: [UInt8]) throws(JWSKeyError) -> JSONValue {
        do {
            return try JSON.parse(json)
        } catch {
            throw JWSKeyError(.malformedKey, "Key JSON is not valid: \(error).")
        }
    }

    static func jwk(object: JSONObject, algorithm requested: JWSAlgorithm?) throws(JWSKeyError) -> JWSKey {
        let fields = JWKFields(object)
        switch try fields.optionalString("use") {
        case nil, "sig": break
        case "enc": throw JWSKeyError(.encryptionKey, "A JWK with \"use\": \"enc\" is an encryption key.")
        case let use?: throw JWSKeyError(.malformedKey, "Unknown JWK \"use\": \(Sanitized.quote(use)).")
        }
        try checkKeyOperations(fields)
        let keyID = try fields.optionalString("kid")
        var algorithm = requested
        if let name = try fields.optionalString("alg") {
            guard let named = JWSAlgorithm(rawValue: name) else {
                let quoted = Sanitized.quote(name)
                throw JWSKeyError(.unsupportedKey, "JWK \"alg\": \(quoted) is not a supported JWS algorithm.")
            }
            algorithm = named
        }
        let kty = try fields.string("kty")
        if kty == "oct" {
            guard let algorithm else {
                throw JWSKeyError(.malformedKey, "An oct JWK needs an \"alg\" member or an explicit algorithm.")
            }
            return try hmacKey(secret: fields.bytes("k"), algorithm: algorithm, keyID: keyID)
        }
        if let algorithm, algorithm.isSymmetric {
            throw JWSKeyError(.algorithmMismatch, "A \(Sanitized.quote(kty)) JWK cannot be used for \(algorithm).")
        }
        let key: EVPKey
        switch kty {
        case "RSA": key = try JWKImport.rsa(fields)
        case "EC": key = try JWKImport.ec(fields)
        case "OKP": key = try JWKImport.okp(fields)
        default: throw JWSKeyError(.unsupportedKey, "JWK kty \(Sanitized.quote(kty)) is not supported.")
        }
        return try bind(key, algorithm: algorithm, keyID: keyID)
    }

    // RFC 7517 section 4.3: "key_ops" lists what the key is for. A JWS key must be allowed to sign or verify;
    // a list without either (e.g. ["encrypt"]) marks a key meant for something else.
    private static func checkKeyOperations(_ fields: JWKFields) throws(JWSKeyError) {
        guard let value = fields.object["key_ops"] else { return }
        guard case .array(let elements) = value else {
            throw JWSKeyError(.malformedKey, "JWK member \"key_ops\" must be an array of strings.")
        }
        let operations = elements.compactMap(\.stringValue)
        guard operations.count == elements.count else {
            throw JWSKeyError(.malformedKey, "JWK member \"key_ops\" must be an array of strings.")
        }
        guard operations.contains("sign") || operations.contains("verify") else {
            throw JWSKeyError(.encryptionKey, "JWK \"key_ops\" allows neither \"sign\" nor \"verify\".")
        }
    }

    // `hmac(secret:…)` with its error typed, for use inside typed-throws code.
    private static func hmacKey(secret: [UInt8], algorithm: JWSAlgorithm, keyID: String?) throws(JWSKeyError) -> JWSKey {
        do {
            return try hmac(secret: secret, algorithm: algorithm, keyID: keyID)
        } catch let error as JWSKeyError {
            throw error
        } catch {
            throw JWSKeyError(.malformedKey, "\(error)")
        }
    }
}
