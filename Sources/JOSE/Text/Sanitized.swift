/// Untrusted text (token headers, key files) made safe to put in an error message: quoted, every character outside
/// printable ASCII escaped, and truncated, so a hostile token can neither inject log lines nor flood a log.
package enum Sanitized {
    /// Characters kept from the input before "…" is appended.
    static let maximumCharacters = 32

    /// `"text"` with `"`, `\` and everything outside 0x20–0x7E escaped as `\uXXXX` (`\u{XXXXX}` above the BMP),
    /// cut after `maximumCharacters` Unicode scalars.
    package static func quote(_ text: String) -> String {
        var output = "\""
        var count = 0
        for scalar in text.unicodeScalars {
            guard count < maximumCharacters else {
                output += "…"
                break
            }
            count += 1
            switch scalar.value {
            case 0x22, 0x5C: output += "\\u00" + hex(scalar.value, digits: 2)
            case 0x20...0x7E: output.unicodeScalars.append(scalar)
            case 0...0xFFFF: output += "\\u" + hex(scalar.value, digits: 4)
            default: output += "\\u{" + hex(scalar.value, digits: 5) + "}"
            }
        }
        return output + "\""
    }

    /// Whether `scalar` may stand as it is in a line a person or a line-oriented tool reads: printable ASCII but `\`
    /// and `"`, and every other character but controls (C0, DEL, C1), format characters (bidirectional overrides,
    /// zero-width joiners), line, paragraph and space separators other than the space, surrogates, private-use and
    /// unassigned code points. What is not is written as an escape by whoever writes the line.
    package static func isShownAsIs(_ scalar: Unicode.Scalar) -> Bool {
        switch scalar.value {
        case 0x20...0x7E: return scalar != "\\" && scalar != "\""
        case 0...0x9F: return false
        default: break
        }
        switch scalar.properties.generalCategory {
        case .control, .format, .lineSeparator, .paragraphSeparator, .spaceSeparator, .surrogate, .privateUse, .unassigned: return false
        default: return true
        }
    }

    private static func hex(_ value: UInt32, digits: Int) -> String {
        let text = String(value, radix: 16, uppercase: true)
        return String(repeating: "0", count: max(digits - text.count, 0)) + text
    }
}
