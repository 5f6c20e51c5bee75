import OpenSSLPrimitives

/// One key bound to exactly one algorithm. Immutable; share freely across tasks.
///
/// The binding is what makes algorithm confusion impossible: a verifier compares the token's `alg` with
/// `algorithm` and never derives the algorithm from the token.
public final class JWSKey: Sendable {
    /// The only algorithm this key signs or verifies with.
    public let algorithm: JWSAlgorithm
    /// The JWK `kid`, if any.
    public let keyID: String?

    enum Material: Sendable {
        case asymmetric(EVPKey)
        case secret([UInt8])
    }

    let material: Material

    init(algorithm: JWSAlgorithm, keyID: String?, material: Material) {
        self.algorithm = algorithm
        self.keyID = keyID
        self.material = material
    }

    /// Binds an EVP key to `algorithm` (default: the key type's), refusing a misfit or a weak key.
    static func bind(_ key: EVPKey, algorithm: JWSAlgorithm?, keyID: String?) throws(JWSKeyError) -> JWSKey {
        try checkKeyID(keyID)
        let algorithm = algorithm ?? key.defaultAlgorithm
        try key.validate(for: algorithm)
        return JWSKey(algorithm: algorithm, keyID: keyID, material: .asymmetric(key))
    }

    // An empty kid cannot name a key: a token's "kid": "" must never select one.
    static func checkKeyID(_ keyID: String?) throws(JWSKeyError) {
        guard keyID?.isEmpty != true else { throw JWSKeyError(.malformedKey, "A key ID must not be empty.") }
    }

    /// True for private asymmetric keys and for HMAC keys.
    public var isPrivate: Bool {
        switch material {
        case .asymmetric(let key): key.isPrivate
        case .secret: true
        }
    }

    /// True for HMAC keys.
    public var isSymmetric: Bool { algorithm.isSymmetric }

    /// "RSA 2048", "EC P-256", "Ed25519", "HMAC 256-bit" (the secret's size); never key material.
    public var summary: String {
        switch material {
        case .asymmetric(let key): key.summary
        case .secret(let secret): "HMAC \(secret.count * 8)-bit"
        }
    }

    /// An HMAC key; refuses a secret shorter than the hash output (32/48/64 bytes for HS256/384/512) and an empty
    /// key ID.
    public static func hmac(secret: [UInt8], algorithm: JWSAlgorithm, keyID: String? = nil) throws -> JWSKey {
        try checkKeyID(keyID)
        guard algorithm.isSymmetric else {
            throw JWSKeyError(.algorithmMismatch, "An HMAC secret cannot be used for \(algorithm).")
        }
        guard secret.count >= algorithm.digestLength else {
            throw JWSKeyError(
                .weakKey, "HMAC secret of \(secret.count) bytes; \(algorithm) needs at least \(algorithm.digestLength).")
        }
        return JWSKey(algorithm: algorithm, keyID: keyID, material: .secret(secret))
    }

    /// A fresh key from OpenSSL: RSA 2048 (RS*/PS*), P-256/384/521 (ES*), Ed25519 (EdDSA), a random secret of the
    /// hash's length (HS*).
    public static func generate(_ algorithm: JWSAlgorithm, keyID: String? = nil) throws -> JWSKey {
        if algorithm.isSymmetric {
            let secret = try withOpenSSL { () throws(OpenSSLError) in try Random.bytes(algorithm.digestLength) }
            return try hmac(secret: secret, algorithm: algorithm, keyID: keyID)
        }
        let key = try withOpenSSL { () throws(OpenSSLError) in try EVPKey.generate(for: algorithm) }
        return try bind(key, algorithm: algorithm, keyID: keyID)
    }

    /// The public half, with the same algorithm and key ID. HMAC keys and public keys return `self`.
    public func publicKey() -> JWSKey {
        guard case .asymmetric(let key) = material, key.isPrivate else { return self }
        // The SPKI round trip cannot fail for a key OpenSSL built; if it somehow did, refusing to hand out a
        // key that still holds private material is safer than returning self.
        guard let publicOnly = try? key.publicOnly() else {
            preconditionFailure("OpenSSL could not re-read its own public key")
        }
        return JWSKey(algorithm: algorithm, keyID: keyID, material: .asymmetric(publicOnly))
    }

    /// The JWS signature over `signingInput` (ASCII "header.payload"): raw R‖S for ES*, PKCS#1 v1.5 for RS*, PSS
    /// (salt = digest length, MGF1 same hash) for PS*, pure Ed25519, HMAC. Throws `not_a_private_key` for a
    /// public key.
    public func signature(for signingInput: [UInt8]) throws -> [UInt8] {
        try signingInput.withUnsafeBytes { input throws(JWSKeyError) in try signature(forBytes: input) }
    }

    // The signers hand over the bytes in place (e.g. a String's UTF-8), so nothing is copied per signature.
    func signature(forBytes signingInput: UnsafeRawBufferPointer) throws(JWSKeyError) -> [UInt8] {
        switch material {
        case .asymmetric(let key):
            guard key.isPrivate else { throw JWSKeyError(.notPrivate, "A public \(summary) key cannot sign.") }
            return try withOpenSSL { () throws(OpenSSLError) in try key.sign(signingInput, algorithm: algorithm) }
        case .secret(let secret):
            return try withOpenSSL { () throws(OpenSSLError) in
                try HMAC.authenticate(signingInput, secret: secret, algorithm: algorithm)
            }
        }
    }

    /// Strict check: ES* signatures must be exactly 64/96/132 bytes with 0 < r, s < n (DER refused), RS*/PS*
    /// signatures exactly as long as the modulus; HMAC is compared in constant time. Never throws: a failure is
    /// `false`, with the OpenSSL error queue cleared.
    public func isValidSignature(_ signature: [UInt8], for signingInput: [UInt8]) -> Bool {
        signingInput.withUnsafeBytes { isValidSignature(signature, forBytes: $0) }
    }

    func isValidSignature(_ signature: [UInt8], forBytes signingInput: UnsafeRawBufferPointer) -> Bool {
        switch material {
        case .asymmetric(let key):
            return key.isValidSignature(signature, for: signingInput, algorithm: algorithm)
        case .secret(let secret):
            guard let expected = try? HMAC.authenticate(signingInput, secret: secret, algorithm: algorithm) else {
                OpenSSLError.clearQueue()
                return false
            }
            return ConstantTime.isEqual(expected, signature)
        }
    }

    /// PKCS#8 PEM (label "PRIVATE KEY"). Throws for public and HMAC keys.
    public func privateKeyPEM() throws -> String {
        guard case .asymmetric(let key) = material else {
            throw JWSKeyError(.unsupportedKey, "HMAC secrets have no PEM form.")
        }
        guard key.isPrivate else { throw JWSKeyError(.notPrivate, "This \(summary) key is public.") }
        return try withOpenSSL { () throws(OpenSSLError) in try key.privateKeyPEM() }
    }

    /// SPKI PEM ("-----BEGIN PUBLIC KEY-----"). Throws for HMAC keys.
    public func publicKeyPEM() throws -> String {
        guard case .asymmetric(let key) = material else {
            throw JWSKeyError(.unsupportedKey, "HMAC secrets have no public key.")
        }
        return try withOpenSSL { () throws(OpenSSLError) in try key.publicKeyPEM() }
    }
}

/// Runs OpenSSL work, reporting a failure as `JWSKeyError(.openSSL)` with the drained queue attached.
func withOpenSSL<Result>(_ body: () throws(OpenSSLError) -> Result) throws(JWSKeyError) -> Result {
    do {
        return try body()
    } catch {
        throw JWSKeyError.openSSL(error)
    }
}
