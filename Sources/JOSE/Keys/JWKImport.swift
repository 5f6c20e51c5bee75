import OpenSSLPrimitives

/// Builds EVP keys from JWK parameters with OSSL_PARAM_BLD + EVP_PKEY_fromdata.
enum JWKImport {
    // Far above any real key; keeps a hostile JWKS from making OpenSSL chew on megabit moduli.
    static let maximumRSAModulusBytes = 2048

    static func rsa(_ fields: JWKFields) throws(JWSKeyError) -> EVPKey {
        let modulus = try fields.bytes("n")
        guard modulus.count <= maximumRSAModulusBytes else {
            throw JWSKeyError(.unsupportedKey, "RSA modulus of \(modulus.count * 8) bits is larger than supported.")
        }
        let exponent = try fields.bytes("e")
        let privateExponent = try fields.optionalBytes("d")
        if fields.object["oth"] != nil {
            throw JWSKeyError(.unsupportedKey, "Multi-prime RSA JWKs (\"oth\") are not supported.")
        }
        let factorNames = ["p", "q", "dp", "dq", "qi"]
        let factors = try factorNames.map { name throws(JWSKeyError) in try fields.optionalBytes(name) }
        let presentFactors = factors.compactMap { $0 }
        guard presentFactors.isEmpty || (presentFactors.count == 5 && privateExponent != nil) else {
            throw JWSKeyError(.malformedKey, "An RSA JWK needs d with all of p, q, dp, dq, qi, or none of them.")
        }
        return try build(type: "RSA", isPrivate: privateExponent != nil) { builder throws(OpenSSLError) in
            try builder.addNumber("n", modulus)
            try builder.addNumber("e", exponent)
            if let privateExponent { try builder.addNumber("d", privateExponent) }
            let parameterNames = ["rsa-factor1", "rsa-factor2", "rsa-exponent1", "rsa-exponent2", "rsa-coefficient1"]
            for (name, value) in zip(parameterNames, presentFactors) { try builder.addNumber(name, value) }
        }
    }

    static func ec(_ fields: JWKFields) throws(JWSKeyError) -> EVPKey {
        let name = try fields.string("crv")
        guard let curve = ECCurve(jwkName: name) else {
            throw JWSKeyError(.unsupportedKey, "EC curve \(Sanitized.quote(name)) is not P-256, P-384 or P-521.")
        }
        let size = curve.coordinateLength
        let point = [0x04] + (try fields.bytes("x", length: size)) + (try fields.bytes("y", length: size))
        let privateScalar: [UInt8]? = fields.object["d"] == nil ? nil : try fields.bytes("d", length: size)
        let key: EVPKey
        do {
            key = try build(type: "EC", isPrivate: privateScalar != nil) { builder throws(OpenSSLError) in
                try builder.addString("group", curve.jwkName)
                try builder.addBytes("pub", point)
                if let privateScalar { try builder.addNumber("priv", privateScalar) }
            }
        } catch  where error.reason == .openSSL {
            // The lengths were right, so OpenSSL refused the point itself: it is not on the curve.
            throw JWSKeyError(.invalidECPoint, "The EC point (x, y) is not on \(curve.jwkName).", openSSLError: error.openSSLError)
        }
        try key.checkPublicKey()
        return key
    }

    static func okp(_ fields: JWKFields) throws(JWSKeyError) -> EVPKey {
        let name = try fields.string("crv")
        guard name == "Ed25519" else {
            throw JWSKeyError(.unsupportedKey, "OKP curve \(Sanitized.quote(name)) is not supported; only Ed25519.")
        }
        let publicKey = try fields.bytes("x", length: 32)
        let privateKey: [UInt8]? = fields.object["d"] == nil ? nil : try fields.bytes("d", length: 32)
        return try build(type: "ED25519", isPrivate: privateKey != nil) { builder throws(OpenSSLError) in
            try builder.addBytes("pub", publicKey)
            if let privateKey { try builder.addBytes("priv", privateKey) }
        }
    }

    private static func build(
        type: String,
        isPrivate: Bool,
        _ fill: (ParameterBuilder) throws(OpenSSLError) -> Void
    ) throws(JWSKeyError) -> EVPKey {
        let pointer = try withOpenSSL { () throws(OpenSSLError) in
            let builder = try ParameterBuilder()
            try fill(builder)
            return try builder.makeKey(type: type, isPrivate: isPrivate)
        }
        let key = try EVPKey.make(takingOwnershipOf: pointer, isPrivate: isPrivate)
        // A JWK spells the public and private parts separately, so nothing guarantees they match.
        if isPrivate { try key.checkKeyPair() }
        return key
    }
}
