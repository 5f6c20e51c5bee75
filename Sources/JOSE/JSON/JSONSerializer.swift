/// Compact JSON output in member order.
enum JSONSerializer {
    static func write(_ value: JSONValue, to output: inout [UInt8], forLine: Bool = false) {
        switch value {
        case .null: output += Array("null".utf8)
        case .bool(let flag): output += Array((flag ? "true" : "false").utf8)
        case .integer(let integer): output += Array(String(integer).utf8)
        case .double(let double):
            // JSON has no NaN or infinity; the parser never produces them, so only hand-built values get here.
            output += Array((double.isFinite ? "\(double)" : "null").utf8)
        case .string(let string): forLine ? writeLineString(string, to: &output) : writeString(string, to: &output)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (offset, element) in elements.enumerated() {
                if offset > 0 { output.append(UInt8(ascii: ",")) }
                write(element, to: &output, forLine: forLine)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let object):
            output.append(UInt8(ascii: "{"))
            for (offset, member) in object.enumerated() {
                if offset > 0 { output.append(UInt8(ascii: ",")) }
                if forLine { writeLineString(member.key, to: &output) } else { writeString(member.key, to: &output) }
                output.append(UInt8(ascii: ":"))
                write(member.value, to: &output, forLine: forLine)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    // Lower-case hex digits for `\u00XX`, made once rather than per string.
    private static let hex: [UInt8] = Array("0123456789abcdef".utf8)

    /// Writes `string` quoted and escaped. Runs of bytes that need no escaping (all of a token, nearly all of
    /// anything else) are appended in bulk; only the bytes in between are looked at one by one.
    static func writeString(_ string: String, to output: inout [UInt8]) {
        var string = string
        string.withUTF8 { bytes in
            // Plain text is the common case: room for it and the quotes, escapes grow the array as needed.
            output.reserveCapacity(output.count + bytes.count + 2)
            output.append(UInt8(ascii: "\""))
            var runStart = 0
            for index in bytes.indices {
                let byte = bytes[index]
                guard needsEscape(byte) else { continue }
                output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart..<index]))
                writeEscape(byte, to: &output)
                runStart = index + 1
            }
            output.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[runStart...]))
            output.append(UInt8(ascii: "\""))
        }
    }

    /// ``writeString(_:to:)``, and what ``Sanitized/isShownAsIs(_:)`` would not show beyond ASCII as `\uXXXX` (a
    /// pair of surrogate escapes above the BMP). Plain ASCII, nearly every string, goes the fast way.
    static func writeLineString(_ string: String, to output: inout [UInt8]) {
        guard string.utf8.contains(where: { $0 >= 0x7F }) else { return writeString(string, to: &output) }
        output.append(UInt8(ascii: "\""))
        for scalar in string.unicodeScalars {
            if scalar.isASCII, scalar.value != 0x7F {
                let byte = UInt8(scalar.value)
                if needsEscape(byte) { writeEscape(byte, to: &output) } else { output.append(byte) }
            } else if Sanitized.isShownAsIs(scalar) {
                output.append(contentsOf: String(scalar).utf8)
            } else {
                for unit in String(scalar).utf16 {
                    output += [0x5C, UInt8(ascii: "u")] + (0..<4).reversed().map { hex[Int(unit >> (4 * UInt16($0)) & 0xF)] }
                }
            }
        }
        output.append(UInt8(ascii: "\""))
    }

    private static func needsEscape(_ byte: UInt8) -> Bool {
        byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\")
    }

    private static func writeEscape(_ byte: UInt8, to output: inout [UInt8]) {
        output.append(0x5C)
        switch byte {
        case UInt8(ascii: "\""): output.append(UInt8(ascii: "\""))
        case UInt8(ascii: "\\"): output.append(0x5C)
        case 0x0A: output.append(UInt8(ascii: "n"))
        case 0x0D: output.append(UInt8(ascii: "r"))
        case 0x09: output.append(UInt8(ascii: "t"))
        case 0x08: output.append(UInt8(ascii: "b"))
        case 0x0C: output.append(UInt8(ascii: "f"))
        default:
            output.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]])
        }
    }
}
