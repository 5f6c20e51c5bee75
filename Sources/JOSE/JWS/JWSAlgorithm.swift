/// A JWS signature algorithm (RFC 7518 section 3, RFC 8037). `none` is not a case, so it can never be accepted.
public enum JWSAlgorithm: String, Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// RSASSA-PKCS1-v1_5 with SHA-256.
    case rs256 = "RS256"
    /// RSASSA-PKCS1-v1_5 with SHA-384.
    case rs384 = "RS384"
    /// RSASSA-PKCS1-v1_5 with SHA-512.
    case rs512 = "RS512"
    /// RSASSA-PSS with SHA-256, MGF1 SHA-256, salt of 32 bytes.
    case ps256 = "PS256"
    /// RSASSA-PSS with SHA-384, MGF1 SHA-384, salt of 48 bytes.
    case ps384 = "PS384"
    /// RSASSA-PSS with SHA-512, MGF1 SHA-512, salt of 64 bytes.
    case ps512 = "PS512"
    /// ECDSA over P-256 with SHA-256, raw R‖S signature of 64 bytes.
    case es256 = "ES256"
    /// ECDSA over P-384 with SHA-384, raw R‖S signature of 96 bytes.
    case es384 = "ES384"
    /// ECDSA over P-521 with SHA-512, raw R‖S signature of 132 bytes.
    case es512 = "ES512"
    /// Ed25519 (RFC 8037).
    case edDSA = "EdDSA"
    /// HMAC with SHA-256; secret of at least 32 bytes.
    case hs256 = "HS256"
    /// HMAC with SHA-384; secret of at least 48 bytes.
    case hs384 = "HS384"
    /// HMAC with SHA-512; secret of at least 64 bytes.
    case hs512 = "HS512"

    /// True for the HMAC algorithms.
    public var isSymmetric: Bool {
        switch self {
        case .hs256, .hs384, .hs512: true
        default: false
        }
    }

    /// The `alg` header value.
    public var description: String { rawValue }

    enum Family { case rsa, rsaPSS, ecdsa, edDSA, hmac }

    var family: Family {
        switch self {
        case .rs256, .rs384, .rs512: .rsa
        case .ps256, .ps384, .ps512: .rsaPSS
        case .es256, .es384, .es512: .ecdsa
        case .edDSA: .edDSA
        case .hs256, .hs384, .hs512: .hmac
        }
    }

    // Digest output size in bytes: the HMAC minimum secret length and the PSS salt length.
    var digestLength: Int {
        switch self {
        case .rs256, .ps256, .es256, .hs256: 32
        case .rs384, .ps384, .es384, .hs384: 48
        case .rs512, .ps512, .es512, .hs512, .edDSA: 64
        }
    }

    // OpenSSL digest name; nil for EdDSA, which hashes internally.
    var digestName: String? {
        switch digestLength {
        case _ where self == .edDSA: nil
        case 32: "SHA256"
        case 48: "SHA384"
        default: "SHA512"
        }
    }

    // The curve an ES* algorithm is bound to (RFC 7518 section 3.4).
    var curve: ECCurve? {
        switch self {
        case .es256: .p256
        case .es384: .p384
        case .es512: .p521
        default: nil
        }
    }
}
