extension JWSKey {
    /// The first key or certificate in a PEM text: PKCS#8 private, PKCS#1 RSA private (label "RSA PRIVATE KEY"),
    /// SEC1 EC private (label "EC PRIVATE KEY"), SPKI public (label "PUBLIC KEY"), PKCS#1 RSA public, or an X.509
    /// certificate ("BEGIN CERTIFICATE": its public key). Default algorithm when `nil`: RSA → RS256,
    /// EC P-256/384/521 → ES256/384/512, Ed25519 → EdDSA. A given algorithm must fit the key.
    public static func pem(_ text: String, algorithm: JWSAlgorithm? = nil, keyID: String? = nil) throws -> JWSKey {
        if let algorithm, algorithm.isSymmetric {
            // Refusing here is what stops "HMAC with the PEM text as secret" at load time.
            throw JWSKeyError(.algorithmMismatch, "A PEM key cannot be used for \(algorithm).")
        }
        let key = try EVPKey.load(pem: text)
        return try bind(key, algorithm: algorithm, keyID: keyID)
    }
}
