/// The NIST curves JOSE uses, with their JWK, OpenSSL and size facts.
enum ECCurve: Sendable, CaseIterable {
    case p256, p384, p521

    // JWK "crv".
    var jwkName: String {
        switch self {
        case .p256: "P-256"
        case .p384: "P-384"
        case .p521: "P-521"
        }
    }

    // OpenSSL's group name as EVP_PKEY_get_utf8_string_param("group") reports it.
    var groupName: String {
        switch self {
        case .p256: "prime256v1"
        case .p384: "secp384r1"
        case .p521: "secp521r1"
        }
    }

    // Bytes per coordinate and per half of a raw R‖S signature.
    var coordinateLength: Int {
        switch self {
        case .p256: 32
        case .p384: 48
        case .p521: 66
        }
    }

    var algorithm: JWSAlgorithm {
        switch self {
        case .p256: .es256
        case .p384: .es384
        case .p521: .es512
        }
    }

    init?(jwkName: String) {
        guard let curve = ECCurve.allCases.first(where: { $0.jwkName == jwkName }) else { return nil }
        self = curve
    }

    init?(groupName: String) {
        // OpenSSL may also report the NIST alias.
        let aliases = ["P-256": ECCurve.p256, "P-384": .p384, "P-521": .p521]
        guard let curve = ECCurve.allCases.first(where: { $0.groupName == groupName }) ?? aliases[groupName] else {
            return nil
        }
        self = curve
    }
}
