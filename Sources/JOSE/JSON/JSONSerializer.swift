/// Compact JSON output in member order.
enum JSONSerializer {
    static func write(_ value: JSONValue, to output: inout [UInt8]) {
        switch value {
        case .null: output += Array("null".utf8)
        case .bool(let flag): output += Array((flag ? "true" : "false").utf8)
        case .integer(let integer): output += Array(String(integer).utf8)
        case .double(let double):
            // JSON has no NaN or infinity; the parser never produces them, so only hand-built values get here.
            output += Array((double.isFinite ? "\(double)" : "null").utf8)
        case .string(let string): writeString(string, to: &output)
        case .array(let elements):
            output.append(UInt8(ascii: "["))
            for (offset, element) in elements.enumerated() {
                if offset > 0 { output.append(UInt8(ascii: ",")) }
                write(element, to: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let object):
            output.append(UInt8(ascii: "{"))
            for (offset, member) in object.enumerated() {
                if offset > 0 { output.append(UInt8(ascii: ",")) }
                writeString(member.key, to: &output)
                output.append(UInt8(ascii: ":"))
                write(member.value, to: &output)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    static func writeString(_ string: String, to output: inout [UInt8]) {
        let hex = Array("0123456789abcdef".utf8)
        output.append(UInt8(ascii: "\""))
        for byte in string.utf8 {
            switch byte {
            case UInt8(ascii: "\""): output += [0x5C, UInt8(ascii: "\"")]
            case UInt8(ascii: "\\"): output += [0x5C, 0x5C]
            case 0x0A: output += [0x5C, UInt8(ascii: "n")]
            case 0x0D: output += [0x5C, UInt8(ascii: "r")]
            case 0x09: output += [0x5C, UInt8(ascii: "t")]
            case 0x08: output += [0x5C, UInt8(ascii: "b")]
            case 0x0C: output += [0x5C, UInt8(ascii: "f")]
            case 0x00..<0x20: output += Array("\\u00".utf8) + [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            default: output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
    }
}
