import JOSE
import Testing

@Suite struct JSONParserTests {
    static func parse(_ text: String) throws -> JSONValue { try JSON.parse(Array(text.utf8)) }

    @Test func parsesEveryKindOfValue() throws {
        let value = try Self.parse(#" {"a":[1,-2.5,true,false,null,"s",{}],"b":{"c":[]}} "#)
        let object = try #require(value.objectValue)
        #expect(object.keys == ["a", "b"])
        #expect(object["a"] == [1, -2.5, true, false, nil, "s", .object(JSONObject())])
        #expect(object["b"] == .object(["c": []]))
    }

    @Test(arguments: [
        #"{"a":1,"a":2}"#, #"{"a":{"b":1,"b":1}}"#, #"[{"x":1},{"y":1,"y":2}]"#, #"{"\u0061":1,"a":2}"#,
    ])
    func duplicateNamesAnywhereAreRefused(text: String) {
        #expect(throws: JSONError.self) { try Self.parse(text) }
    }

    @Test(arguments: [
        "", " ", "{} {}", "{}x", "[1,]", "{\"a\":1,}", "[1 2]", "{'a':1}", "{a:1}", "tru", "nul", "NaN", "Infinity",
        "01", "-", "1.", ".5", "1e", "+1", "\"unterminated", "\"tab\there\"", "\"\\x\"", "[", "{\"a\"}", "\u{FEFF}{}",
    ])
    func malformedTextIsRefused(text: String) {
        #expect(throws: JSONError.self) { try Self.parse(text) }
    }

    @Test func invalidUTF8IsRefused() {
        #expect(throws: JSONError.self) { try JSON.parse([0x22, 0xC3, 0x28, 0x22]) }
        #expect(throws: JSONError.self) { try JSON.parse([0x22, 0xED, 0xA0, 0x80, 0x22]) }  // UTF-8 surrogate
    }

    @Test func depthIsLimitedTo32() throws {
        let ok = String(repeating: "[", count: 32) + String(repeating: "]", count: 32)
        _ = try Self.parse(ok)
        let deep = String(repeating: "[", count: 33) + String(repeating: "]", count: 33)
        let error = try #require(throws: JSONError.self) { try Self.parse(deep) }
        #expect(error.offset == 32)
        let hostile = String(repeating: "{\"a\":", count: 100_000)
        #expect(throws: JSONError.self) { try Self.parse(hostile) }
    }

    @Test(arguments: [
        ("0", JSONValue.integer(0)), ("-0", .integer(0)), ("9223372036854775807", .integer(.max)),
        ("-9223372036854775808", .integer(.min)), ("9223372036854775808", .double(9_223_372_036_854_775_808)),
        ("1.0", .double(1)), ("1e3", .double(1000)), ("-1.5E-2", .double(-0.015)), ("1300819380", .integer(1_300_819_380)),
    ])
    func numbers(text: String, expected: JSONValue) throws {
        #expect(try Self.parse(text) == expected)
    }

    @Test func hugeExponentsAreRefused() {
        #expect(throws: JSONError.self) { try Self.parse("1e400") }
    }

    @Test(arguments: [
        (#""\"\\\/\b\f\n\r\t""#, "\"\\/\u{8}\u{C}\n\r\t"), (#""\u00e9\u20AC""#, "é€"),
        (#""\ud83d\ude00""#, "😀"), (#""caf\u00E9 😀""#, "café 😀"), (#""\u0000""#, "\u{0}"),
    ])
    func escapesDecode(text: String, expected: String) throws {
        #expect(try Self.parse(text) == .string(expected))
    }

    @Test(arguments: [#""\ud83d""#, #""\ude00""#, #""\ud83d\u0041""#, #""\ud83dx""#, #""\u12""#, #""\u12G4""#])
    func loneOrBrokenSurrogatesAreRefused(text: String) {
        #expect(throws: JSONError.self) { try Self.parse(text) }
    }

    @Test func serializationIsCompactOrderedAndEscaped() {
        var object: JSONObject = ["z": 1, "a": "x/y"]
        object["m"] = .string("quote\" back\\ nl\n ctl\u{1} é")
        object["z"] = 2  // replaces in place
        let text = String(decoding: JSON.serialize(.object(object)), as: UTF8.self)
        #expect(text == #"{"z":2,"a":"x/y","m":"quote\" back\\ nl\n ctl\u0001 é"}"#)
        object["a"] = nil
        #expect(object.keys == ["z", "m"])
    }

    // Escapes at either end of a string and back to back, around the runs that are copied in bulk.
    @Test(arguments: [
        ("", #""""#), ("\"", #""\"""#), ("\u{1F}ab\n", #""\u001fab\n""#), ("\\\\", #""\\\\""#),
        ("a\u{7F}\u{0}", #""a\#u{7F}\u0000""#), ("€\t€", #""€\t€""#),
    ])
    func stringsSerializeEscapedAtEveryPosition(string: String, expected: String) {
        #expect(String(decoding: JSON.serialize(.string(string)), as: UTF8.self) == expected)
    }

    @Test(arguments: [
        #"{"a":[1,2.5,"\u00e9",{"b":null}],"c":true}"#, #"[]"#, #""😀""#, #"-12"#,
    ])
    func serializeThenParseIsIdentity(text: String) throws {
        let value = try Self.parse(text)
        #expect(try JSON.parse(JSON.serialize(value)) == value)
    }

    @Test func objectEqualityIgnoresOrder() {
        let first: JSONObject = ["a": 1, "b": 2]
        let second: JSONObject = ["b": 2, "a": 1]
        #expect(first == second)
        #expect(first.hashValue == second.hashValue)
        #expect(first != ["a": 1])
    }

    /// A line of a log: what could break or disguise it where people and line-oriented tools read it is escaped too,
    /// and it still parses back to the same value; plain text is written as `serialize` writes it.
    @Test func aLogLineEscapesWhatCouldBreakOrDisguiseIt() throws {
        let value: JSONValue = .object([
            "tripId": "a\u{7F}b\u{85}c\u{2028}d\u{202E}e\u{200D}f\u{A0}g\u{E0001}h caf\u{E9} \u{1F695}\n\"\\",
            "plain": "trip-42",
        ])
        let line = String(decoding: JSON.serializeLine(value), as: UTF8.self)
        #expect(
            line
                == #"{"tripId":"a\u007fb\u0085c\u2028d\u202ee\u200df\u00a0g\udb40\udc01h café 🚕\n\"\\","plain":"trip-42"}"#)
        #expect(try JSON.parse(Array(line.utf8)) == value)
        #expect(JSON.serializeLine(.object(["plain": "trip-42"])) == JSON.serialize(.object(["plain": "trip-42"])))
    }
}
