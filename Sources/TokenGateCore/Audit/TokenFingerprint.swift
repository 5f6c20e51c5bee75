import JOSE
import OpenSSLPrimitives

/// `sha256:` and the lower-case hex SHA-256 of a compact token's bytes: names a token in the audit log and in
/// `tokengate verify-token` without being the token, so a token seen in the field can be matched to its audit line.
package enum TokenFingerprint {
    /// The fingerprint of `compact`.
    package static func of(_ compact: String) -> String {
        // SHA-256 through OpenSSL fails only if OpenSSL itself cannot allocate; say so rather than crash.
        guard let digest = try? Digest.sha256(Array(compact.utf8)) else { return "sha256:unavailable" }
        return "sha256:" + HexBytes.encode(digest)
    }
}
