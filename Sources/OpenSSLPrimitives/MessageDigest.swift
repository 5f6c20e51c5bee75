internal import COpenSSL

/// The SHA-2 digests (and SHA-1, for names that are not security: Redis script IDs), fetched
/// from the default provider once, at first use.
///
/// An explicitly fetched `EVP_MD` is immutable and reference-counted, so one instance may be shared by all threads
/// (openssl-threads(7)); it is kept for the life of the process and never freed. Fetching per operation would
/// search the provider's method store on every signature.
package final class MessageDigest: @unchecked Sendable {
    package let pointer: OpaquePointer

    private init(name: String) {
        guard let pointer = EVP_MD_fetch(nil, name, nil) else {
            // The default provider always has SHA-1 and SHA-2; without it nothing here could work.
            preconditionFailure("EVP_MD_fetch(\(name)) failed: \(OpenSSLError.drain("EVP_MD_fetch"))")
        }
        self.pointer = pointer
    }

    package static let sha1 = MessageDigest(name: "SHA1")
    package static let sha256 = MessageDigest(name: "SHA256")
    package static let sha384 = MessageDigest(name: "SHA384")
    package static let sha512 = MessageDigest(name: "SHA512")
}
