internal import COpenSSL
import OpenSSLPrimitives

/// Collects key parameters for `EVP_PKEY_fromdata` (the OpenSSL 3 way to build keys; no deprecated RSA_/EC_KEY_).
///
/// `OSSL_PARAM_BLD_push_*` keeps pointers — to the value *and to the parameter name* — until
/// `OSSL_PARAM_BLD_to_param` copies them, so this class owns every BIGNUM, name and byte buffer it pushed (a
/// bridged Swift string would dangle) and frees them (clearing first: they may be private) in `deinit`.
final class ParameterBuilder {
    private let builder: OpaquePointer
    private var numbers: [OpaquePointer] = []
    private var buffers: [UnsafeMutableRawBufferPointer] = []

    init() throws(OpenSSLError) {
        guard let builder = OSSL_PARAM_BLD_new() else { throw OpenSSLError.drain("OSSL_PARAM_BLD_new") }
        self.builder = builder
    }

    deinit {
        OSSL_PARAM_BLD_free(builder)
        for number in numbers { BN_clear_free(number) }
        for buffer in buffers {
            OPENSSL_cleanse(buffer.baseAddress, buffer.count)
            buffer.deallocate()
        }
    }

    /// A big-endian unsigned integer.
    func addNumber(_ name: String, _ bytes: [UInt8]) throws(OpenSSLError) {
        let number = bytes.withUnsafeBufferPointer { BN_bin2bn($0.baseAddress, Int32($0.count), nil) }
        guard let number else { throw OpenSSLError.drain("BN_bin2bn") }
        numbers.append(number)
        try check(OSSL_PARAM_BLD_push_BN(builder, cString(name), number), "OSSL_PARAM_BLD_push_BN(\(name))")
    }

    /// An octet string (EC encoded point, Ed25519 raw key).
    func addBytes(_ name: String, _ bytes: [UInt8]) throws(OpenSSLError) {
        let copy = copyOf(bytes)
        let key = cString(name)
        try check(OSSL_PARAM_BLD_push_octet_string(builder, key, copy.baseAddress, bytes.count), "push(\(name))")
    }

    /// A UTF-8 string (EC group name).
    func addString(_ name: String, _ value: String) throws(OpenSSLError) {
        try check(OSSL_PARAM_BLD_push_utf8_string(builder, cString(name), cString(value), 0), "push(\(name))")
    }

    // A NUL-terminated copy that lives as long as this builder.
    private func cString(_ text: String) -> UnsafePointer<CChar> {
        let copy = copyOf(Array(text.utf8) + [0])
        return UnsafePointer(copy.baseAddress!.assumingMemoryBound(to: CChar.self))
    }

    private func copyOf(_ bytes: [UInt8]) -> UnsafeMutableRawBufferPointer {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 1)
        buffer.copyBytes(from: bytes)
        buffers.append(buffer)
        return buffer
    }

    /// Builds an owned EVP_PKEY of `type` ("RSA", "EC", "ED25519") from the collected parameters.
    func makeKey(type: String, isPrivate: Bool) throws(OpenSSLError) -> OpaquePointer {
        guard let params = OSSL_PARAM_BLD_to_param(builder) else { throw OpenSSLError.drain("OSSL_PARAM_BLD_to_param") }
        defer { OSSL_PARAM_free(params) }
        guard let context = EVP_PKEY_CTX_new_from_name(nil, type, nil) else {
            throw OpenSSLError.drain("EVP_PKEY_CTX_new_from_name")
        }
        defer { EVP_PKEY_CTX_free(context) }
        try check(EVP_PKEY_fromdata_init(context), "EVP_PKEY_fromdata_init")
        let selection = isPrivate ? tokengate_EVP_PKEY_KEYPAIR() : tokengate_EVP_PKEY_PUBLIC_KEY()
        var key: OpaquePointer?
        try check(EVP_PKEY_fromdata(context, &key, selection, params), "EVP_PKEY_fromdata")
        guard let key else { throw OpenSSLError.drain("EVP_PKEY_fromdata") }
        return key
    }
}
