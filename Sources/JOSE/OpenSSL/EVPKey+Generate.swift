internal import COpenSSL
import OpenSSLPrimitives

extension EVPKey {
    /// A fresh key: RSA 2048 (RS*/PS*), the algorithm's curve (ES*), Ed25519 (EdDSA).
    static func generate(for algorithm: JWSAlgorithm) throws(OpenSSLError) -> EVPKey {
        let type: String
        switch algorithm.family {
        case .rsa, .rsaPSS: type = "RSA"
        case .ecdsa: type = "EC"
        case .edDSA: type = "ED25519"
        case .hmac: preconditionFailure("HMAC keys are random bytes, not EVP keys")
        }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, type, nil) else {
            throw OpenSSLError.drain("EVP_PKEY_CTX_new_from_name")
        }
        defer { EVP_PKEY_CTX_free(context) }
        try check(EVP_PKEY_keygen_init(context), "EVP_PKEY_keygen_init")
        if type == "RSA" {
            try check(EVP_PKEY_CTX_set_rsa_keygen_bits(context, 2048), "EVP_PKEY_CTX_set_rsa_keygen_bits")
        }
        if let curve = algorithm.curve {
            try check(EVP_PKEY_CTX_set_group_name(context, curve.jwkName), "EVP_PKEY_CTX_set_group_name")
        }
        var key: OpaquePointer?
        try check(EVP_PKEY_generate(context, &key), "EVP_PKEY_generate")
        guard let key else { throw OpenSSLError.drain("EVP_PKEY_generate") }
        do {
            return try make(takingOwnershipOf: key, isPrivate: true)
        } catch {
            throw OpenSSLError(operation: "EVP_PKEY_generate", details: [error.message])
        }
    }
}
