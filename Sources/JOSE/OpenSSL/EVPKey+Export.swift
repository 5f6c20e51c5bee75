internal import COpenSSL
import OpenSSLPrimitives

extension EVPKey {
    /// A big-integer parameter ("n", "e", "qx", "qy") as big-endian bytes, left-padded to `length` when given.
    func number(_ name: String, length: Int? = nil) throws(OpenSSLError) -> [UInt8] {
        var number: OpaquePointer?
        try check(EVP_PKEY_get_bn_param(pointer, name, &number), "EVP_PKEY_get_bn_param(\(name))")
        guard let number else { throw OpenSSLError.drain("EVP_PKEY_get_bn_param(\(name))") }
        // get_bn_param allocates a copy: ours to free.
        defer { BN_clear_free(number) }
        let size = length ?? Int((BN_num_bits(number) + 7) / 8)
        var bytes = [UInt8](repeating: 0, count: size)
        guard BN_bn2binpad(number, &bytes, Int32(size)) == size else { throw OpenSSLError.drain("BN_bn2binpad") }
        return bytes
    }

    /// An octet-string parameter (the raw Ed25519 public key, "pub").
    func octets(_ name: String) throws(OpenSSLError) -> [UInt8] {
        var length = 0
        try check(EVP_PKEY_get_octet_string_param(pointer, name, nil, 0, &length), "get_octet_string_param(\(name))")
        var bytes = [UInt8](repeating: 0, count: length)
        try check(EVP_PKEY_get_octet_string_param(pointer, name, &bytes, length, &length), "get_octet_string_param")
        return Array(bytes.prefix(length))
    }

    /// A key holding only the public half, through an SPKI DER round trip.
    func publicOnly() throws(OpenSSLError) -> EVPKey {
        let der = try subjectPublicKeyInfo()
        let key: OpaquePointer? = der.withUnsafeBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return d2i_PUBKEY(nil, &cursor, buffer.count)
        }
        guard let key else { throw OpenSSLError.drain("d2i_PUBKEY") }
        do {
            return try EVPKey.make(takingOwnershipOf: key, isPrivate: false)
        } catch {
            throw OpenSSLError(operation: "d2i_PUBKEY", details: [error.message])
        }
    }

    /// The DER SubjectPublicKeyInfo.
    func subjectPublicKeyInfo() throws(OpenSSLError) -> [UInt8] {
        let length = i2d_PUBKEY(pointer, nil)
        guard length > 0 else { throw OpenSSLError.drain("i2d_PUBKEY") }
        var der = [UInt8](repeating: 0, count: Int(length))
        let written = der.withUnsafeMutableBufferPointer { buffer in
            var cursor = buffer.baseAddress
            return i2d_PUBKEY(pointer, &cursor)
        }
        guard written == length else { throw OpenSSLError.drain("i2d_PUBKEY") }
        return der
    }

    /// "-----BEGIN PUBLIC KEY-----" (SPKI).
    func publicKeyPEM() throws(OpenSSLError) -> String {
        let bio = try MemoryBIO()
        return try withExtendedLifetime(bio) { () throws(OpenSSLError) in
            try check(PEM_write_bio_PUBKEY(bio.pointer, pointer), "PEM_write_bio_PUBKEY")
            return bio.string()
        }
    }

    /// PEM label "PRIVATE KEY" (unencrypted PKCS#8).
    func privateKeyPEM() throws(OpenSSLError) -> String {
        let bio = try MemoryBIO()
        return try withExtendedLifetime(bio) { () throws(OpenSSLError) in
            try check(
                PEM_write_bio_PKCS8PrivateKey(bio.pointer, pointer, nil, nil, 0, nil, nil),
                "PEM_write_bio_PKCS8PrivateKey"
            )
            return bio.string()
        }
    }
}
