import NIOCore
import RESP
import Testing

/// The decoder on byte strings: every RESP2 and RESP3 type, every split point, and hostile input.
@Suite struct RESPDecoderTests {
    /// Decodes every value in `text`, feeding the bytes in chunks split at `splits`.
    static func decodeAll(
        _ text: String, splittingAt splits: [Int] = [], limits: RESPDecoder.Limits = .init()
    ) throws -> [RESPValue] {
        let processor = NIOSingleStepByteToMessageProcessor(RESPDecoder(limits: limits))
        let bytes = Array(text.utf8)
        var values: [RESPValue] = []
        var start = 0
        for end in splits + [bytes.count] where end >= start {
            try processor.process(buffer: ByteBuffer(bytes: bytes[start..<end])) { values.append($0) }
            start = end
        }
        #expect(processor.unprocessedBytes == 0, "bytes left over")
        return values
    }

    static func decodeOne(_ text: String, limits: RESPDecoder.Limits = .init()) throws -> RESPValue? {
        var decoder = RESPDecoder(limits: limits)
        var buffer = ByteBuffer(string: text)
        return try decoder.decode(buffer: &buffer)
    }

    static func bulk(_ text: String) -> RESPValue { .bulkString(ByteBuffer(string: text)) }

    /// One of each type, as a server would frame it, and the value it means.
    static let everyType: [(String, RESPValue)] = [
        ("+OK\r\n", .simpleString(ByteBuffer(string: "OK"))),
        ("-ERR wrong\r\n", .error(ByteBuffer(string: "ERR wrong"))),
        (":-42\r\n", .integer(-42)),
        ("$5\r\nhe\r\no\r\n", bulk("he\r\no")),
        ("$0\r\n\r\n", bulk("")),
        ("$-1\r\n", .bulkString(nil)),
        ("*2\r\n:1\r\n$1\r\na\r\n", .array([.integer(1), bulk("a")])),
        ("*0\r\n", .array([])),
        ("*-1\r\n", .array(nil)),
        ("_\r\n", .null),
        ("#t\r\n", .boolean(true)),
        ("#f\r\n", .boolean(false)),
        (",3.25\r\n", .double(3.25)),
        (",-inf\r\n", .double(-.infinity)),
        ("(-3492890328409238509324850943850943825024385\r\n", .bigNumber("-3492890328409238509324850943850943825024385")),
        ("!9\r\nERR blob!\r\n", .error(ByteBuffer(string: "ERR blob!"))),
        ("=8\r\ntxt:Some\r\n", .verbatimString(format: "txt", text: ByteBuffer(string: "Some"))),
        ("%2\r\n+a\r\n:1\r\n$1\r\nb\r\n#t\r\n", .map([.simpleString(ByteBuffer(string: "a")): .integer(1), bulk("b"): .boolean(true)])),
        ("~3\r\n:1\r\n:2\r\n:1\r\n", .set([.integer(1), .integer(2)])),
        (">3\r\n$7\r\nmessage\r\n$2\r\nch\r\n$2\r\nhi\r\n", .push([bulk("message"), bulk("ch"), bulk("hi")])),
        ("|1\r\n+ttl\r\n:3600\r\n:7\r\n", .integer(7)),  // an attribute, skipped
        ("*2\r\n|1\r\n+key\r\n*1\r\n_\r\n:1\r\n:2\r\n", .array([.integer(1), .integer(2)])),  // nested attribute
    ]

    @Test func everyTypeDecodes() throws {
        for (text, expected) in Self.everyType {
            #expect(try Self.decodeAll(text) == [expected], "\(text.debugDescription)")
        }
    }

    @Test func nanIsADouble() throws {
        let value = try #require(try Self.decodeOne(",nan\r\n"))
        guard case .double(let double) = value else {
            Issue.record("not a double: \(value)")
            return
        }
        #expect(double.isNaN)
    }

    /// All the values back to back, split into two chunks at every byte: the same values, whatever the split.
    @Test func splittingAtEveryByteGivesTheSameValues() throws {
        let stream = Self.everyType.map(\.0).joined()
        let expected = Self.everyType.map(\.1)
        for split in 0...stream.utf8.count {
            #expect(try Self.decodeAll(stream, splittingAt: [split]) == expected, "split at \(split)")
        }
        let everyByte = Array(0...stream.utf8.count)
        #expect(try Self.decodeAll(stream, splittingAt: everyByte) == expected)
    }

    @Test func anIncompleteValueConsumesNothing() throws {
        for text in ["", "+OK", "+OK\r", "$5\r\nhel", "$5\r\nhello\r", "*2\r\n:1\r\n", "%1\r\n:1\r\n", "|1\r\n+a\r\n:1\r\n"] {
            var decoder = RESPDecoder()
            var buffer = ByteBuffer(string: text)
            #expect(try decoder.decode(buffer: &buffer) == nil, "\(text.debugDescription)")
            #expect(buffer.readableBytes == text.utf8.count)
        }
    }

    @Test(arguments: [
        ("$17\r\n", RESPDecodingError.bulkTooLong(length: 17, limit: 16)),
        ("!17\r\n", .bulkTooLong(length: 17, limit: 16)),
        ("$999999999999999999\r\n", .bulkTooLong(length: 999_999_999_999_999_999, limit: 16)),
        ("$9999999999999999999\r\n", .invalidLength("9999999999999999999")),
        ("*5\r\n", .aggregateTooLarge(count: 5, limit: 4)),
        ("%5\r\n", .aggregateTooLarge(count: 5, limit: 4)),  // a map counts pairs
        ("*4294967296\r\n", .aggregateTooLarge(count: 4_294_967_296, limit: 4)),
        ("$-2\r\n", .invalidLength("-2")),
        ("*-2\r\n", .invalidLength("-2")),
        ("%-1\r\n", .invalidLength("-1")),
        ("!-1\r\n", .invalidLength("-1")),
        ("$+1\r\na\r\n", .invalidLength("+1")),
        ("$\r\n", .invalidLength("")),
        ("$3\r\nabcXY", .badTerminator),
        ("+OK\rX", .badTerminator),
        (":12a\r\n", .invalidValue("integer 12a")),
        (":99999999999999999999\r\n", .invalidValue("integer 99999999999999999999")),
        ("#x\r\n", .invalidValue("boolean x")),
        (",1.2.3\r\n", .invalidValue("double 1.2.3")),
        ("(12x\r\n", .invalidValue("big number 12x")),
        ("_x\r\n", .invalidValue("null with content")),
        ("=3\r\ntxt\r\n", .invalidValue("verbatim string without a format")),
        ("?\r\n", .unknownType(UInt8(ascii: "?"))),
        ("$?\r\n", .invalidLength("?")),
    ])
    func hostileInputIsRejected(input: String, expected: RESPDecodingError) {
        let limits = RESPDecoder.Limits(maxBulkLength: 16, maxAggregateCount: 4, maxDepth: 3, maxLineLength: 32)
        #expect(throws: expected) { try Self.decodeOne(input, limits: limits) }
    }

    @Test func nestingDeeperThanTheLimitIsRejected() throws {
        let limits = RESPDecoder.Limits(maxDepth: 3)
        #expect(try Self.decodeOne("*1\r\n*1\r\n*1\r\n:1\r\n", limits: limits) == .array([.array([.array([.integer(1)])])]))
        #expect(throws: RESPDecodingError.nestedTooDeep(limit: 3)) {
            try Self.decodeOne("*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n", limits: limits)
        }
        // A million nested arrays would overflow a recursive decoder's stack; the limit stops it at once.
        let deep = String(repeating: "*1\r\n", count: 1_000_000)
        #expect(throws: RESPDecodingError.nestedTooDeep(limit: 32)) { try Self.decodeOne(deep) }
    }

    @Test func aLineWithoutTerminatorIsRejectedAtTheLimit() throws {
        let limits = RESPDecoder.Limits(maxLineLength: 32)
        #expect(try Self.decodeOne("+" + String(repeating: "a", count: 32), limits: limits) == nil)
        #expect(throws: RESPDecodingError.lineTooLong(limit: 32)) {
            try Self.decodeOne("+" + String(repeating: "a", count: 33), limits: limits)
        }
    }

    /// A claimed count costs nothing until its bytes are there, and the bytes held for one value are bounded.
    @Test func aHugeClaimedAggregateWaitsForBytesThenHitsThePendingLimit() throws {
        #expect(try Self.decodeOne("*1000000\r\n:1\r\n") == nil)
        let limits = RESPDecoder.Limits(maxPendingBytes: 64)
        let text = "*100\r\n" + String(repeating: ":1\r\n", count: 20)
        #expect(throws: RESPDecodingError.valueTooLarge(limit: 64)) { try Self.decodeOne(text, limits: limits) }
    }

    /// Attributes in a row are skipped in a loop: a long run of them neither overflows the stack nor fails.
    @Test func aLongRunOfAttributesIsSkipped() throws {
        let text = String(repeating: "|0\r\n", count: 100_000) + ":5\r\n"
        #expect(try Self.decodeOne(text) == .integer(5))
    }
}
