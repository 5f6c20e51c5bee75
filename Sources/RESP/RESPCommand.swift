public import NIOCore

/// One command as the server reads it: an array of bulk strings, the name first.
public struct RESPCommand: Sendable, Hashable {
    /// The name and arguments, exactly as sent.
    public var arguments: [ByteBuffer]

    /// A command from raw arguments (`["SET", key, value]`), for values that are bytes, not text.
    public init(_ arguments: [ByteBuffer]) {
        precondition(!arguments.isEmpty, "a RESP command has at least a name")
        self.arguments = arguments
    }

    /// A command from text arguments (`["GET", "key"]`).
    public init(_ arguments: [String]) { self.init(texts: [arguments], after: []) }

    /// A command of `leading` and then the text arguments of each of `texts`, in order; the texts are slices of one
    /// buffer: one allocation, not one each.
    init(texts: [[String]], after leading: [ByteBuffer]) {
        let count = texts.reduce(0) { $0 + $1.count }
        var storage = ByteBufferAllocator().buffer(capacity: texts.reduce(0) { $0 + $1.reduce(0) { $0 + $1.utf8.count } })
        var arguments = leading
        arguments.reserveCapacity(leading.count + count)
        for text in texts.joined() {
            let length = storage.writeString(text)
            arguments.append(storage.getSlice(at: storage.writerIndex - length, length: length)!)
        }
        self.init(arguments)
    }

    /// The command's name, upper-cased, for errors and logs: arguments may be secrets (AUTH) and are never shown.
    public var name: String { String(buffer: arguments[0]).uppercased() }

    /// Appends the command in RESP framing: `*N\r\n` then `$len\r\nbytes\r\n` per argument.
    public func encode(into buffer: inout ByteBuffer) {
        buffer.writeInteger(UInt8(ascii: "*"))
        Self.writeDecimal(arguments.count, into: &buffer)
        buffer.writeStaticString("\r\n")
        for argument in arguments {
            buffer.writeInteger(UInt8(ascii: "$"))
            Self.writeDecimal(argument.readableBytes, into: &buffer)
            buffer.writeStaticString("\r\n")
            buffer.writeImmutableBuffer(argument)
            buffer.writeStaticString("\r\n")
        }
    }

    /// At least the bytes ``encode(into:)`` writes for arguments under 10⁸ bytes: a buffer this size is never grown.
    var encodedSizeEstimate: Int { arguments.reduce(16) { $0 + $1.readableBytes + 13 } }

    /// `value`'s decimal digits, without making a `String`.
    private static func writeDecimal(_ value: Int, into buffer: inout ByteBuffer) {
        precondition(value >= 0)
        guard value >= 10 else {
            buffer.writeInteger(UInt8(ascii: "0") + UInt8(value))
            return
        }
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for any Int's digits
        let count = withUnsafeMutableBytes(of: &digits) { bytes in
            var (rest, index) = (value, bytes.count)
            while rest > 0 {
                index -= 1
                bytes[index] = UInt8(ascii: "0") + UInt8(rest % 10)
                rest /= 10
            }
            return bytes.count - index
        }
        withUnsafeBytes(of: &digits) { bytes in _ = buffer.writeBytes(UnsafeRawBufferPointer(rebasing: bytes.suffix(count))) }
    }
}
