package import NIOCore

/// One command as the server reads it: an array of bulk strings, the name first.
package struct RESPCommand: Sendable, Hashable {
    /// The name and arguments, exactly as sent.
    package var arguments: [ByteBuffer]

    /// A command from raw arguments (`["SET", key, value]`), for values that are bytes, not text.
    package init(_ arguments: [ByteBuffer]) {
        precondition(!arguments.isEmpty, "a RESP command has at least a name")
        self.arguments = arguments
    }

    /// A command from text arguments (`["GET", "key"]`), built as ``RESPCommandBuilder`` does.
    package init(_ arguments: [String]) {
        var builder = RESPCommandBuilder([], capacity: arguments.reduce(0) { $0 + $1.utf8.count })
        for argument in arguments { builder.append(argument) }
        self = builder.command
    }

    /// The command's name, upper-cased, for errors and logs: arguments may be secrets (AUTH) and are never shown.
    package var name: String { String(buffer: arguments[0]).uppercased() }

    /// Appends the command in RESP framing: `*N\r\n` then `$len\r\nbytes\r\n` per argument.
    package func encode(into buffer: inout ByteBuffer) {
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
    static func writeDecimal(_ value: some BinaryInteger, into buffer: inout ByteBuffer) {
        guard value >= 0 else {
            buffer.writeString(String(value))
            return
        }
        guard value >= 10 else {
            buffer.writeInteger(UInt8(ascii: "0") + UInt8(value))
            return
        }
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: room for any 64-bit value's digits
        let count = withUnsafeMutableBytes(of: &digits) { bytes in
            var (rest, index) = (UInt64(value), bytes.count)
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

/// Builds a command argument by argument: the arguments' bytes go into one buffer, sliced once all are written (a
/// slice taken earlier would make every later write copy the buffer), so a command of many arguments costs two
/// allocations, not one or more each.
package struct RESPCommandBuilder {
    private var storage: ByteBuffer
    private var leading: [ByteBuffer]
    private var ends: [Int] = []

    /// A command that starts with `leading` (arguments made already: a name, a script's digest), then what is
    /// appended; `capacity` is a guess of the appended bytes.
    package init(_ leading: [ByteBuffer], capacity: Int) {
        self.storage = ByteBufferAllocator().buffer(capacity: capacity)
        self.leading = leading
    }

    /// Appends `text` as an argument.
    package mutating func append(_ text: String) {
        storage.writeString(text)
        ends.append(storage.writerIndex)
    }

    /// Appends `number` in decimal as an argument.
    package mutating func append(_ number: Int64) {
        RESPCommand.writeDecimal(number, into: &storage)
        ends.append(storage.writerIndex)
    }

    /// The command.
    package var command: RESPCommand {
        var arguments = leading
        arguments.reserveCapacity(leading.count + ends.count)
        var start = 0
        for end in ends {
            arguments.append(storage.getSlice(at: start, length: end - start)!)
            start = end
        }
        return RESPCommand(arguments)
    }
}
