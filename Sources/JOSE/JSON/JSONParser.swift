/// A recursive-descent RFC 8259 parser that refuses everything lenient parsers let through: duplicate names
/// (two readers could see different values), trailing bytes, invalid UTF-8, lone surrogates, deep nesting.
struct JSONParser {
    static let maximumDepth = 32

    // Internal rather than private: the string scanner lives in JSONParser+String.swift.
    let bytes: [UInt8]
    var index = 0
    private var depth = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    mutating func parseDocument() throws(JSONError) -> JSONValue {
        skipWhitespace()
        let value = try parseValue()
        skipWhitespace()
        guard index == bytes.count else { throw failure("Unexpected bytes after the JSON value") }
        return value
    }

    func failure(_ message: String) -> JSONError { JSONError(message: message, offset: index) }

    var current: UInt8? { index < bytes.count ? bytes[index] : nil }

    func peek(_ offset: Int) -> UInt8? { index + offset < bytes.count ? bytes[index + offset] : nil }

    private mutating func skipWhitespace() {
        while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
    }

    private mutating func expect(_ literal: String, _ value: JSONValue) throws(JSONError) -> JSONValue {
        let expected = Array(literal.utf8)
        guard bytes.count - index >= expected.count, Array(bytes[index..<index + expected.count]) == expected else {
            throw failure("Invalid literal")
        }
        index += expected.count
        return value
    }

    private mutating func parseValue() throws(JSONError) -> JSONValue {
        guard let byte = current else { throw failure("Unexpected end of input") }
        switch byte {
        case UInt8(ascii: "{"):
            try enterNesting()
            defer { depth -= 1 }
            return .object(try parseObject())
        case UInt8(ascii: "["):
            try enterNesting()
            defer { depth -= 1 }
            return .array(try parseArray())
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): return try expect("true", .bool(true))
        case UInt8(ascii: "f"): return try expect("false", .bool(false))
        case UInt8(ascii: "n"): return try expect("null", .null)
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw failure("Unexpected character")
        }
    }

    // Bounded recursion: a hostile token cannot exhaust the stack.
    private mutating func enterNesting() throws(JSONError) {
        guard depth < Self.maximumDepth else { throw failure("Nesting deeper than \(Self.maximumDepth)") }
        depth += 1
    }

    private mutating func parseObject() throws(JSONError) -> JSONObject {
        index += 1  // "{"
        var object = JSONObject()
        // A set keeps duplicate detection linear: a 16 KiB token can hold thousands of members. Names are equal
        // when their code points are (RFC 8259 section 8.3), not under canonical equivalence: "K" and "\u212A"
        // are two names, exactly as JSONObject's subscript tells them apart.
        var names = Set<ExactText>()
        skipWhitespace()
        if current == UInt8(ascii: "}") {
            index += 1
            return object
        }
        while true {
            skipWhitespace()
            guard current == UInt8(ascii: "\"") else { throw failure("Expected a member name") }
            let nameOffset = index
            let name = try parseString()
            guard names.insert(ExactText(name)).inserted else {
                throw JSONError(message: "Duplicate member name \(Sanitized.quote(name))", offset: nameOffset)
            }
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw failure("Expected ':'") }
            index += 1
            skipWhitespace()
            object.append(uniqueKey: name, value: try parseValue())
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                return object
            default: throw failure("Expected ',' or '}'")
            }
        }
    }

    private mutating func parseArray() throws(JSONError) -> [JSONValue] {
        index += 1  // "["
        var elements: [JSONValue] = []
        skipWhitespace()
        if current == UInt8(ascii: "]") {
            index += 1
            return elements
        }
        while true {
            skipWhitespace()
            elements.append(try parseValue())
            skipWhitespace()
            switch current {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"):
                index += 1
                return elements
            default: throw failure("Expected ',' or ']'")
            }
        }
    }

    private mutating func parseNumber() throws(JSONError) -> JSONValue {
        let start = index
        var isInteger = true
        if current == UInt8(ascii: "-") { index += 1 }
        // int = "0" / digit1-9 *digit: no leading zeros.
        if current == UInt8(ascii: "0") {
            index += 1
        } else {
            guard try skipDigits() > 0 else { throw failure("Expected a digit") }
        }
        if current == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard try skipDigits() > 0 else { throw failure("Expected a digit after '.'") }
        }
        if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
            guard try skipDigits() > 0 else { throw failure("Expected a digit in the exponent") }
        }
        let text = String(decoding: bytes[start..<index], as: UTF8.self)
        if isInteger, let integer = Int64(text) { return .integer(integer) }
        guard let double = Double(text), double.isFinite else {
            throw JSONError(message: "Number out of range", offset: start)
        }
        return .double(double)
    }

    private mutating func skipDigits() throws(JSONError) -> Int {
        let start = index
        while let byte = current, byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") { index += 1 }
        return index - start
    }
}
