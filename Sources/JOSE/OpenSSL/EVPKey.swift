internal import COpenSSL
import OpenSSLPrimitives
internal import Synchronization

/// An owned `EVP_PKEY`: RSA, EC (P-256/384/521) or Ed25519.
///
/// Threads may share one `EVP_PKEY` that nobody mutates, each with its own `EVP_MD_CTX` (openssl-threads(7)).
/// Nothing mutates the key after init and every operation works on its own duplicate of a per-algorithm template
/// context (`SignatureTemplate`, read-only once published), hence `@unchecked Sendable`.
final class EVPKey: @unchecked Sendable {
    struct TemplateKey: Hashable {
        let algorithm: JWSAlgorithm
        let signing: Bool
    }

    enum Kind: Equatable, Sendable {
        case rsa(bits: Int)
        case ec(ECCurve)
        case ed25519
    }

    let pointer: OpaquePointer
    let kind: Kind
    let isPrivate: Bool
    /// Built at first use per algorithm and direction, then only read (see `template(for:signing:)`).
    private let templates = Mutex<[TemplateKey: SignatureTemplate]>([:])

    private init(pointer: OpaquePointer, kind: Kind, isPrivate: Bool) {
        self.pointer = pointer
        self.kind = kind
        self.isPrivate = isPrivate
    }

    deinit { EVP_PKEY_free(pointer) }

    /// The template for `algorithm`, built once under the lock: a key serves few algorithms, so the map stays tiny.
    func template(for algorithm: JWSAlgorithm, signing: Bool) throws(OpenSSLError) -> SignatureTemplate {
        let key = TemplateKey(algorithm: algorithm, signing: signing)
        return try templates.withLock { (map: inout [TemplateKey: SignatureTemplate]) throws(OpenSSLError) in
            if let template = map[key] { return template }
            let template = try SignatureTemplate(key: self, algorithm: algorithm, signing: signing)
            map[key] = template
            return template
        }
    }

    /// Takes ownership of `pointer` (freed here if the key type is refused).
    static func make(takingOwnershipOf pointer: OpaquePointer, isPrivate: Bool) throws(JWSKeyError) -> EVPKey {
        do {
            let kind = try kind(of: pointer)
            return EVPKey(pointer: pointer, kind: kind, isPrivate: isPrivate)
        } catch {
            EVP_PKEY_free(pointer)
            throw error
        }
    }

    private static func kind(of pointer: OpaquePointer) throws(JWSKeyError) -> Kind {
        switch EVP_PKEY_get_base_id(pointer) {
        case EVP_PKEY_RSA:
            return .rsa(bits: Int(EVP_PKEY_get_bits(pointer)))
        case EVP_PKEY_EC:
            var buffer = [CChar](repeating: 0, count: 64)
            var length = 0
            guard EVP_PKEY_get_utf8_string_param(pointer, "group", &buffer, buffer.count, &length) == 1 else {
                throw JWSKeyError(.unsupportedKey, "EC key without a named curve.", openSSLError: .drain("group"))
            }
            let name = String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
            guard let curve = ECCurve(groupName: name) else {
                throw JWSKeyError(.unsupportedKey, "EC curve \(Sanitized.quote(name)) is not P-256, P-384 or P-521.")
            }
            return .ec(curve)
        case EVP_PKEY_ED25519:
            return .ed25519
        case EVP_PKEY_RSA_PSS:
            throw JWSKeyError(.unsupportedKey, "RSA-PSS-restricted keys are not supported; use a plain RSA key.")
        default:
            throw JWSKeyError(.unsupportedKey, "Only RSA, EC P-256/384/521 and Ed25519 keys are supported.")
        }
    }

    /// The algorithm a key of this kind gets when none is named.
    var defaultAlgorithm: JWSAlgorithm {
        switch kind {
        case .rsa: .rs256
        case .ec(let curve): curve.algorithm
        case .ed25519: .edDSA
        }
    }

    /// Refuses an algorithm the key cannot serve, RSA under 2048 bits and RSA public keys OpenSSL finds unsound.
    func validate(for algorithm: JWSAlgorithm) throws(JWSKeyError) {
        switch (kind, algorithm.family) {
        case (.rsa(let bits), .rsa), (.rsa(let bits), .rsaPSS):
            // The size first, so a short key is reported as short whatever else is wrong with it.
            guard bits >= 2048 else { throw JWSKeyError(.weakKey, "RSA key of \(bits) bits; at least 2048 needed.") }
            try checkRSAPublicKey()
        case (.ec(let curve), .ecdsa):
            guard curve.algorithm == algorithm else {
                throw JWSKeyError(.algorithmMismatch, "An EC \(curve.jwkName) key cannot be used for \(algorithm).")
            }
        case (.ed25519, .edDSA):
            break
        default:
            throw JWSKeyError(.algorithmMismatch, "A \(summary) key cannot be used for \(algorithm).")
        }
    }

    /// "RSA 2048", "EC P-256", "Ed25519".
    var summary: String {
        switch kind {
        case .rsa(let bits): "RSA \(bits)"
        case .ec(let curve): "EC \(curve.jwkName)"
        case .ed25519: "Ed25519"
        }
    }

    /// Checks that an EC public point lies on its curve (and the key is otherwise consistent).
    func checkPublicKey() throws(JWSKeyError) {
        try withKeyContext { context throws(JWSKeyError) in
            guard EVP_PKEY_public_check(context) == 1 else {
                let queue = OpenSSLError.drain("EVP_PKEY_public_check")
                throw JWSKeyError(.invalidECPoint, "The public key fails OpenSSL's check.", openSSLError: queue)
            }
        }
    }

    // Every RSA load path (JWK, JWKS, PEM, certificate, service account, generated) ends in `validate(for:)`.
    // With e = 1 a "signature" is its own message, so anyone could forge; an even e is not an RSA key. OpenSSL's
    // check (SP 800-56B: e odd and > 1, n odd, composite, no small factors) refuses those; the 2^32 cap keeps
    // a verification, whose cost grows with the bits of e, as cheap as for real keys (e = 65537 in practice).
    private func checkRSAPublicKey() throws(JWSKeyError) {
        let exponentBits: Int
        do {
            // Minimal big-endian bytes: the first one is non-zero (none at all for e = 0).
            let exponent = try number("e")
            exponentBits = exponent.first.map { exponent.count * 8 - $0.leadingZeroBitCount } ?? 0
        } catch {
            throw JWSKeyError.openSSL(error)
        }
        guard exponentBits <= 32 else {
            throw JWSKeyError(.weakKey, "RSA public exponent of \(exponentBits) bits; at most 2^32 is accepted.")
        }
        // OpenSSL divides only by the primes up to 751; past those it relies on Miller-Rabin rounds with random
        // bases, which refuse a modulus only when one happens to reveal a factor. n = 1033 * (a real modulus)
        // passed it every time, and a fuzzed one with the factor 1033 passed or failed by chance, so one key
        // file could pass check-config and then fail to load. Dividing by every prime below 2^16 is deterministic.
        let hasSmallFactor: Bool
        do { hasSmallFactor = try modulusHasSmallFactor() } catch { throw JWSKeyError.openSSL(error) }
        guard !hasSmallFactor else { throw JWSKeyError(.weakKey, "The RSA modulus has a prime factor below 65536.") }
        try withKeyContext { context throws(JWSKeyError) in
            guard EVP_PKEY_public_check(context) == 1 else {
                let queue = OpenSSLError.drain("EVP_PKEY_public_check")
                throw JWSKeyError(
                    .weakKey, "The RSA public key fails OpenSSL's check (exponent even or 1, or a bad modulus).",
                    openSSLError: queue)
            }
        }
    }

    /// Checks that the private and public parts of a key (separate JWK members, or both halves in a PEM file)
    /// belong together.
    func checkKeyPair() throws(JWSKeyError) {
        try withKeyContext { context throws(JWSKeyError) in
            guard EVP_PKEY_pairwise_check(context) == 1 else {
                let queue = OpenSSLError.drain("EVP_PKEY_pairwise_check")
                throw JWSKeyError(.malformedKey, "The private key does not match its public key.", openSSLError: queue)
            }
        }
    }

    /// Whether the RSA modulus is divisible by a prime below 2^16: one `BN_mod_word` per group of primes whose
    /// product fits a word, then the remainder by each prime of the group.
    private func modulusHasSmallFactor() throws(OpenSSLError) -> Bool {
        var modulus: OpaquePointer?
        try check(EVP_PKEY_get_bn_param(pointer, "n", &modulus), "EVP_PKEY_get_bn_param(n)")
        guard let modulus else { throw OpenSSLError.drain("EVP_PKEY_get_bn_param(n)") }
        // get_bn_param allocates a copy: ours to free.
        defer { BN_free(modulus) }
        for group in Self.smallPrimeGroups {
            let remainder = BN_mod_word(modulus, group.product)
            guard remainder != UInt.max else { throw OpenSSLError.drain("BN_mod_word") }
            if group.primes.contains(where: { remainder % $0 == 0 }) { return true }
        }
        return false
    }

    /// The primes below 2^16 (a sieve, made once), in groups of at most four: their product fits 64 bits.
    private static let smallPrimeGroups: [(product: UInt, primes: [UInt])] = {
        var isComposite = [Bool](repeating: false, count: 1 << 16)
        var primes: [UInt] = []
        for candidate in 2..<(1 << 16) where !isComposite[candidate] {
            primes.append(UInt(candidate))
            for multiple in stride(from: candidate * candidate, to: 1 << 16, by: candidate) { isComposite[multiple] = true }
        }
        return stride(from: 0, to: primes.count, by: 4).map { start in
            let group = Array(primes[start..<min(start + 4, primes.count)])
            return (group.reduce(1, *), group)
        }
    }()

    private func withKeyContext(_ body: (OpaquePointer) throws(JWSKeyError) -> Void) throws(JWSKeyError) {
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, pointer, nil) else {
            throw JWSKeyError.openSSL(.drain("EVP_PKEY_CTX_new_from_pkey"))
        }
        defer { EVP_PKEY_CTX_free(context) }
        try body(context)
    }
}
