import OpenSSLPrimitives

extension JWSKey {
    /// The public JWK as JSON object bytes: kty, kid (if any), use "sig", alg, then n/e | crv/x/y | crv/x.
    /// Throws for HMAC keys.
    public func publicJWK() throws -> [UInt8] {
        JSON.serialize(.object(try publicJWKObject()))
    }

    func publicJWKObject() throws(JWSKeyError) -> JSONObject {
        guard case .asymmetric(let key) = material else {
            throw JWSKeyError(.unsupportedKey, "HMAC secrets are never published as JWKs.")
        }
        var object = JSONObject()
        object["kty"] = .string(Self.keyType(of: key))
        if let keyID { object["kid"] = .string(keyID) }
        object["use"] = "sig"
        object["alg"] = .string(algorithm.rawValue)
        try withOpenSSL { () throws(OpenSSLError) in
            switch key.kind {
            case .rsa:
                object["n"] = .string(Base64URL.encode(try key.number("n")))
                object["e"] = .string(Base64URL.encode(try key.number("e")))
            case .ec(let curve):
                object["crv"] = .string(curve.jwkName)
                object["x"] = .string(Base64URL.encode(try key.number("qx", length: curve.coordinateLength)))
                object["y"] = .string(Base64URL.encode(try key.number("qy", length: curve.coordinateLength)))
            case .ed25519:
                object["crv"] = "Ed25519"
                object["x"] = .string(Base64URL.encode(try key.octets("pub")))
            }
        }
        return object
    }

    private static func keyType(of key: EVPKey) -> String {
        switch key.kind {
        case .rsa: "RSA"
        case .ec: "EC"
        case .ed25519: "OKP"
        }
    }
}
