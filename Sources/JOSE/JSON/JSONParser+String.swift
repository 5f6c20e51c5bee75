extension JSONParser {
    /// A string token: escapes decoded, raw bytes required to be UTF-8, control characters and lone surrogates
    /// refused.
    mutating func parseString() throws(JSONError) -> String {
        let start = index
        index += 1  // opening quote
        var output: [UInt8] = []
        while true {
            guard let byte = current else { throw failure("Unterminated string") }
            index += 1
            switch byte {
            case UInt8(ascii: "\""):
                guard let string = String(validating: output, as: UTF8.self) else {
                    throw JSONError(message: "String is not valid UTF-8", offset: start)
                }
                return string
            case UInt8(ascii: "\\"):
                try parseEscape(into: &output)
            case 0x00..<0x20:
                throw failure("Unescaped control character in string")
            default:
                output.append(byte)
            }
        }
    }

    private mutating func parseEscape(into output: inout [UInt8]) throws(JSONError) {
        guard let byte = current else { throw failure("Unterminated escape") }
        index += 1
        let simple: [UInt8: UInt8] = [
            UInt8(ascii: "\""): 0x22, UInt8(ascii: "\\"): 0x5C, UInt8(ascii: "/"): 0x2F, UInt8(ascii: "b"): 0x08,
            UInt8(ascii: "f"): 0x0C, UInt8(ascii: "n"): 0x0A, UInt8(ascii: "r"): 0x0D, UInt8(ascii: "t"): 0x09,
        ]
        if let decoded = simple[byte] {
            output.append(decoded)
            return
        }
        guard byte == UInt8(ascii: "u") else { throw failure("Invalid escape") }
        var scalar = try parseHex4()
        if (0xD800...0xDBFF).contains(scalar) {
            // A high surrogate must be followed by an escaped low surrogate.
            guard current == UInt8(ascii: "\\"), peek(1) == UInt8(ascii: "u") else {
                throw failure("Lone high surrogate")
            }
            index += 2
            let low = try parseHex4()
            guard (0xDC00...0xDFFF).contains(low) else { throw failure("Invalid low surrogate") }
            scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
        } else if (0xDC00...0xDFFF).contains(scalar) {
            throw failure("Lone low surrogate")
        }
        guard let unicode = Unicode.Scalar(scalar) else { throw failure("Invalid code point") }
        output.append(contentsOf: Array(String(Character(unicode)).utf8))
    }

    private mutating func parseHex4() throws(JSONError) -> UInt32 {
        var value: UInt32 = 0
        for _ in 0..<4 {
            guard let byte = current else { throw failure("Truncated \\u escape") }
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw failure("Invalid hex digit in \\u escape")
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }
}
