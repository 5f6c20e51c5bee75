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
    public init(_ arguments: [String]) { self.init(arguments.map { ByteBuffer(string: $0) }) }

    /// The command's name, upper-cased, for errors and logs: arguments may be secrets (AUTH) and are never shown.
    public var name: String { String(buffer: arguments[0]).uppercased() }

    /// Appends the command in RESP framing: `*N\r\n` then `$len\r\nbytes\r\n` per argument.
    public func encode(into buffer: inout ByteBuffer) {
        buffer.writeStaticString("*")
        buffer.writeString(String(arguments.count))
        buffer.writeStaticString("\r\n")
        for argument in arguments {
            buffer.writeStaticString("$")
            buffer.writeString(String(argument.readableBytes))
            buffer.writeStaticString("\r\n")
            buffer.writeImmutableBuffer(argument)
            buffer.writeStaticString("\r\n")
        }
    }
}
