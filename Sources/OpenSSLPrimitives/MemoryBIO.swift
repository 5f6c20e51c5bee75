internal import COpenSSL

/// An owned memory BIO, for PEM in and out. Callers keep it alive across C calls on `pointer` with
/// `withExtendedLifetime`: `deinit` frees the BIO as soon as Swift sees no further use of the object.
package final class MemoryBIO {
    package let pointer: OpaquePointer

    /// An empty, writable BIO.
    package init() throws(OpenSSLError) {
        guard let bio = BIO_new(BIO_s_mem()) else { throw OpenSSLError.drain("BIO_new") }
        pointer = bio
    }

    /// A BIO holding a copy of `bytes` (a writable memory BIO copies; BIO_new_mem_buf would only borrow).
    package convenience init(copying bytes: [UInt8]) throws(OpenSSLError) {
        try self.init()
        guard bytes.count <= Int32.max else { throw OpenSSLError(operation: "BIO_write", details: ["input too large"]) }
        let written = bytes.withUnsafeBufferPointer { BIO_write(pointer, $0.baseAddress, Int32($0.count)) }
        guard written == bytes.count else { throw OpenSSLError.drain("BIO_write") }
    }

    deinit { BIO_free(pointer) }

    /// Everything written so far, as text.
    package func string() -> String {
        var data: UnsafeMutablePointer<CChar>?
        // get0-style: the bytes stay owned by the BIO.
        let length = tokengate_BIO_get_mem_data(pointer, &data)
        guard let data, length > 0 else { return "" }
        let bytes = UnsafeRawBufferPointer(start: data, count: length)
        return String(decoding: bytes, as: UTF8.self)
    }
}
