internal import COpenSSL

/// AES-256-GCM through OpenSSL's EVP interface: authenticated encryption for values kept outside the process
/// (a token in a shared Redis is a bearer credential).
///
/// A sealed box is `nonce (12 bytes) ‖ ciphertext ‖ tag (16 bytes)`, the layout Python's
/// `cryptography.hazmat.primitives.ciphers.aead.AESGCM` reads when given the nonce apart. The nonce is random per
/// seal; `associatedData` is authenticated but not stored, so a box opens only under the same associated data
/// (the shared cache passes the Redis key: a value copied under another key does not open).
///
/// ```swift
/// let box = try AESGCM.seal(Array(token.utf8), key: key, associatedData: Array(redisKey.utf8))
/// let plain = try AESGCM.open(box, key: key, associatedData: Array(redisKey.utf8))
/// ```
public enum AESGCM {
    /// Key length: AES-256.
    public static let keyLength = 32
    /// Nonce length, the 96 bits GCM is defined for.
    public static let nonceLength = 12
    /// Authentication tag length.
    public static let tagLength = 16

    /// Why a box did not open or a seal failed.
    public enum Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// The key is not 32 bytes.
        case invalidKeyLength(Int)
        /// The box is shorter than a nonce and a tag.
        case truncated
        /// The tag did not verify: wrong key, wrong associated data, or altered bytes.
        case authenticationFailed
        /// OpenSSL failed for another reason.
        case openSSL(String)

        public var description: String {
            switch self {
            case .invalidKeyLength(let length): "an AES-256-GCM key is 32 bytes, not \(length)"
            case .truncated: "the sealed value is shorter than a nonce and a tag"
            case .authenticationFailed: "the sealed value did not authenticate"
            case .openSSL(let message): message
            }
        }
    }

    /// Encrypts and authenticates `plaintext` under `key` with a fresh random nonce.
    public static func seal(_ plaintext: [UInt8], key: [UInt8], associatedData: [UInt8] = []) throws(Failure) -> [UInt8] {
        let nonce: [UInt8]
        do { nonce = try Random.bytes(nonceLength) } catch { throw .openSSL(error.description) }
        return try seal(plaintext, key: key, nonce: nonce, associatedData: associatedData)
    }

    /// Encrypts with a given nonce; for known-answer tests only (a nonce must never repeat under one key).
    static func seal(_ plaintext: [UInt8], key: [UInt8], nonce: [UInt8], associatedData: [UInt8]) throws(Failure) -> [UInt8] {
        guard key.count == keyLength else { throw .invalidKeyLength(key.count) }
        let context = try Context(encrypt: true, key: key, nonce: nonce)
        defer { EVP_CIPHER_CTX_free(context.pointer) }
        try context.addAssociatedData(associatedData)
        var output = nonce
        output.append(contentsOf: try context.update(plaintext))
        var tail = [UInt8](repeating: 0, count: 16)
        var tailLength: Int32 = 0
        guard EVP_EncryptFinal_ex(context.pointer, &tail, &tailLength) == 1 else {
            throw .openSSL(OpenSSLError.drain("EVP_EncryptFinal_ex").description)
        }
        output.append(contentsOf: tail.prefix(Int(tailLength)))
        var tag = [UInt8](repeating: 0, count: tagLength)
        guard EVP_CIPHER_CTX_ctrl(context.pointer, EVP_CTRL_GCM_GET_TAG, Int32(tagLength), &tag) == 1 else {
            throw .openSSL(OpenSSLError.drain("EVP_CTRL_GCM_GET_TAG").description)
        }
        output.append(contentsOf: tag)
        return output
    }

    /// Checks and decrypts a box made by ``seal(_:key:associatedData:)``.
    public static func open(_ box: [UInt8], key: [UInt8], associatedData: [UInt8] = []) throws(Failure) -> [UInt8] {
        guard key.count == keyLength else { throw .invalidKeyLength(key.count) }
        guard box.count >= nonceLength + tagLength else { throw .truncated }
        let nonce = Array(box.prefix(nonceLength))
        let ciphertext = Array(box[nonceLength..<(box.count - tagLength)])
        var tag = Array(box.suffix(tagLength))
        let context = try Context(encrypt: false, key: key, nonce: nonce)
        defer { EVP_CIPHER_CTX_free(context.pointer) }
        try context.addAssociatedData(associatedData)
        var output = try context.update(ciphertext)
        guard EVP_CIPHER_CTX_ctrl(context.pointer, EVP_CTRL_GCM_SET_TAG, Int32(tagLength), &tag) == 1 else {
            throw .openSSL(OpenSSLError.drain("EVP_CTRL_GCM_SET_TAG").description)
        }
        var tail = [UInt8](repeating: 0, count: 16)
        var tailLength: Int32 = 0
        guard EVP_DecryptFinal_ex(context.pointer, &tail, &tailLength) == 1 else {
            // A wrong tag is an answer about the input, not an OpenSSL failure.
            OpenSSLError.clearQueue()
            throw .authenticationFailed
        }
        output.append(contentsOf: tail.prefix(Int(tailLength)))
        return output
    }

    /// One cipher context, initialised for AES-256-GCM with a 12-byte nonce.
    private struct Context {
        let pointer: OpaquePointer
        let encrypt: Bool

        init(encrypt: Bool, key: [UInt8], nonce: [UInt8]) throws(Failure) {
            guard nonce.count == AESGCM.nonceLength else { throw .openSSL("an AES-GCM nonce is 12 bytes, not \(nonce.count)") }
            guard nonce.count == AESGCM.nonceLength else { throw .openSSL("an AES-GCM nonce is 12 bytes, not \(nonce.count)") }
            guard let pointer = EVP_CIPHER_CTX_new() else { throw .openSSL(OpenSSLError.drain("EVP_CIPHER_CTX_new").description) }
            self.pointer = pointer
            self.encrypt = encrypt
            let initialised =
                encrypt
                ? EVP_EncryptInit_ex(pointer, EVP_aes_256_gcm(), nil, key, nonce)
                : EVP_DecryptInit_ex(pointer, EVP_aes_256_gcm(), nil, key, nonce)
            guard initialised == 1 else {
                EVP_CIPHER_CTX_free(pointer)
                throw .openSSL(OpenSSLError.drain("EVP_CipherInit_ex(aes-256-gcm)").description)
            }
        }

        func addAssociatedData(_ data: [UInt8]) throws(Failure) {
            guard !data.isEmpty else { return }
            var length: Int32 = 0
            let result =
                encrypt
                ? EVP_EncryptUpdate(pointer, nil, &length, data, Int32(data.count))
                : EVP_DecryptUpdate(pointer, nil, &length, data, Int32(data.count))
            guard result == 1 else { throw .openSSL(OpenSSLError.drain("EVP_CipherUpdate(aad)").description) }
        }

        func update(_ input: [UInt8]) throws(Failure) -> [UInt8] {
            guard !input.isEmpty else { return [] }
            var output = [UInt8](repeating: 0, count: input.count + 16)
            var length: Int32 = 0
            let result =
                encrypt
                ? EVP_EncryptUpdate(pointer, &output, &length, input, Int32(input.count))
                : EVP_DecryptUpdate(pointer, &output, &length, input, Int32(input.count))
            guard result == 1 else { throw .openSSL(OpenSSLError.drain("EVP_CipherUpdate").description) }
            return Array(output.prefix(Int(length)))
        }
    }
}
