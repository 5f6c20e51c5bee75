import OpenSSLPrimitives

extension MessageDigest {
    /// The digest `algorithm` hashes with; nil for EdDSA, which hashes internally (RFC 8032).
    static func forAlgorithm(_ algorithm: JWSAlgorithm) -> MessageDigest? {
        switch algorithm {
        case .edDSA: nil
        case .rs256, .ps256, .es256, .hs256: sha256
        case .rs384, .ps384, .es384, .hs384: sha384
        case .rs512, .ps512, .es512, .hs512: sha512
        }
    }
}
