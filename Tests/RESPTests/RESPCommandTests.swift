import NIOCore
import RESP
import Testing

@Suite struct RESPCommandTests {
    @Test func aCommandIsAnArrayOfBulkStrings() {
        var buffer = ByteBuffer()
        RESPCommand(["SET", "key", "v\r\nä"]).encode(into: &buffer)
        #expect(String(buffer: buffer) == "*3\r\n$3\r\nSET\r\n$3\r\nkey\r\n$5\r\nv\r\nä\r\n")
    }

    @Test func emptyAndBinaryArgumentsKeepTheirExactLength() {
        var buffer = ByteBuffer()
        RESPCommand([ByteBuffer(string: "ECHO"), ByteBuffer(), ByteBuffer(bytes: [0, 255])]).encode(into: &buffer)
        #expect(Array(buffer.readableBytesView) == Array("*3\r\n$4\r\nECHO\r\n$0\r\n\r\n$2\r\n".utf8) + [0, 255, 13, 10])
    }

    /// Counts and lengths of several digits, written without a `String` in between.
    @Test func longCountsAndLengthsAreWrittenInFull() {
        var buffer = ByteBuffer()
        let arguments = ["MSET"] + (0..<11).map { String(repeating: "x", count: $0 * 1_009) }
        RESPCommand(arguments).encode(into: &buffer)
        let expected = "*12\r\n" + arguments.map { "$\($0.utf8.count)\r\n\($0)\r\n" }.joined()
        #expect(String(buffer: buffer) == expected)
    }

    /// A built command is the command of its arguments as text, numbers in decimal (negative ones too).
    @Test func aBuiltCommandEqualsOneMadeOfText() {
        var builder = RESPCommandBuilder([ByteBuffer(string: "EVALSHA")], capacity: 4)
        for text in ["abc", "", "ключ"] { builder.append(text) }
        for number: Int64 in [0, 7, 10, 1_234_567_890_123, -42] { builder.append(number) }
        let expected = RESPCommand(["EVALSHA", "abc", "", "ключ", "0", "7", "10", "1234567890123", "-42"])
        #expect(builder.command == expected)
        var (built, made) = (ByteBuffer(), ByteBuffer())
        builder.command.encode(into: &built)
        expected.encode(into: &made)
        #expect(built == made)
    }

    /// The name goes into errors and logs; the arguments (a password in AUTH) never do.
    @Test func theNameIsUpperCasedAndArgumentsStayOut() {
        #expect(RESPCommand(["auth", "user", "secret"]).name == "AUTH")
    }

    /// The encoder's output is what the decoder reads back as an array of bulk strings.
    @Test func anEncodedCommandDecodesAsTheSameArguments() throws {
        var buffer = ByteBuffer()
        RESPCommand(["HELLO", "3", "AUTH", "alice", "p@ss"]).encode(into: &buffer)
        var decoder = RESPDecoder()
        let value = try #require(try decoder.decode(buffer: &buffer))
        #expect(value.elements?.compactMap(\.string) == ["HELLO", "3", "AUTH", "alice", "p@ss"])
    }
}
