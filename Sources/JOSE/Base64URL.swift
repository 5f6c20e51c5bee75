/// Base64url without padding (RFC 7515 section 2), strict in what it accepts.
///
/// JWS compares signatures over the *encoded* segments, so two spellings of one byte string would let a token be
/// altered without touching its signature. Decoding therefore accepts only the canonical form: no padding, no
/// characters outside the URL-safe alphabet and no set bits past the last whole byte.
public enum Base64URL {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    // Byte value -> 6-bit value, 0xFF for a foreign byte.
    private static let decodeTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }()

    /// Encodes bytes as unpadded base64url.
    public static func encode<Bytes: Collection<UInt8>>(_ bytes: Bytes) -> String {
        let encode = { (raw: UnsafeRawBufferPointer) in withEncoded(raw) { String(decoding: $0, as: UTF8.self) } }
        return bytes.withContiguousStorageIfAvailable { encode(UnsafeRawBufferPointer($0)) } ?? Array(bytes).withUnsafeBytes(encode)
    }

    /// The length of the unpadded base64url text for `count` bytes.
    public static func encodedCount(of count: Int) -> Int { (count * 4 + 2) / 3 }

    /// Hands the unpadded base64url text of `bytes` to `body`, encoded into temporary storage (on the stack for
    /// a signature's few hundred bytes): for writing a token out without building its string.
    public static func withEncoded<Result>(_ bytes: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        let count = encodedCount(of: bytes.count)
        return withUnsafeTemporaryAllocation(byteCount: max(count, 1), alignment: 1) { output in
            alphabet.withUnsafeBufferPointer { alphabet in
                var written = 0
                var index = 0
                // Whole groups of three bytes first, four characters each, without the tail's branches: a cached
                // token's signature is encoded like this on every response.
                while bytes.count - index >= 3 {
                    let chunk = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
                    output[written] = alphabet[Int(chunk >> 18)]
                    output[written + 1] = alphabet[Int(chunk >> 12 & 0x3F)]
                    output[written + 2] = alphabet[Int(chunk >> 6 & 0x3F)]
                    output[written + 3] = alphabet[Int(chunk & 0x3F)]
                    written += 4
                    index += 3
                }
                // One or two bytes left: two or three characters, no padding.
                if index < bytes.count {
                    let second = index + 1 < bytes.count
                    let chunk = UInt32(bytes[index]) << 16 | UInt32(second ? bytes[index + 1] : 0) << 8
                    output[written] = alphabet[Int(chunk >> 18)]
                    output[written + 1] = alphabet[Int(chunk >> 12 & 0x3F)]
                    written += 2
                    if second {
                        output[written] = alphabet[Int(chunk >> 6 & 0x3F)]
                        written += 1
                    }
                }
                return body(UnsafeRawBufferPointer(rebasing: output[..<written]))
            }
        }
    }

    /// Decodes canonical unpadded base64url, or returns `nil` for anything else.
    public static func decode<Text: StringProtocol>(_ text: Text) -> [UInt8]? {
        decode(utf8: Array(text.utf8))
    }

    /// Decodes canonical unpadded base64url from UTF-8 bytes, or returns `nil` for anything else.
    public static func decode<Bytes: Collection<UInt8>>(utf8 input: Bytes) -> [UInt8]? {
        input.withContiguousStorageIfAvailable { decode(utf8: $0) } ?? Array(input).withUnsafeBufferPointer { decode(utf8: $0) }
    }

    /// Decodes canonical unpadded base64url from contiguous UTF-8 bytes, or returns `nil` for anything else.
    ///
    /// Not generic, so that a caller in another module runs this compiled loop: the generic entry point, called
    /// across a module boundary, is not specialized and stepped through every character by witness-table calls
    /// (5 % of a mint's CPU, for a token's signature segment).
    public static func decode(utf8 input: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        // A lone trailing character carries only 6 bits: never a whole byte.
        let count = input.count
        if count % 4 == 1 { return nil }
        var isCanonical = true
        // Every 4 characters make 3 bytes, and a tail of 2 or 3 makes 1 or 2: count * 3 / 4 exactly.
        let output = [UInt8](unsafeUninitializedCapacity: count * 3 / 4) { buffer, initialized in
            let table = decodeTable
            var accumulator: UInt32 = 0
            var bits = 0
            var written = 0
            for byte in input {
                let value = table[Int(byte)]
                if value == 0xFF {
                    isCanonical = false
                    break
                }
                accumulator = accumulator << 6 | UInt32(value)
                bits += 6
                if bits >= 8 {
                    bits -= 8
                    buffer[written] = UInt8(truncatingIfNeeded: accumulator >> UInt32(bits))
                    written += 1
                    accumulator &= (1 << UInt32(bits)) - 1
                }
            }
            // Leftover bits must be zero, or two different strings would decode to the same bytes.
            if accumulator != 0 { isCanonical = false }
            initialized = written
        }
        return isCanonical ? output : nil
    }
}
