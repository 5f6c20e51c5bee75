/// The two encodings Google's Python library (`google-auth`) puts on the wire for federation, byte for byte: a JSON
/// string as `json.dumps` writes it, and `urllib.parse.quote`. STS reads what that library sends, so TokenGate sends
/// the same bytes rather than an equivalent it has not seen accepted: the AWS subject token, the X.509 subject
/// token and the STS `options` are built with these.
package enum LibraryEncoding {
    /// `json.dumps(text)`: quoted, `"` and `\` escaped, the short escapes for \b \f \n \r \t, everything else outside
    /// printable ASCII as lower-case `\uXXXX` (UTF-16, so a surrogate pair above the BMP), as `ensure_ascii` does.
    package static func jsonString(_ text: String) -> String {
        var output = "\""
        for unit in text.utf16 {
            switch unit {
            case 0x22: output += "\\\""
            case 0x5C: output += "\\\\"
            case 0x08: output += "\\b"
            case 0x0C: output += "\\f"
            case 0x0A: output += "\\n"
            case 0x0D: output += "\\r"
            case 0x09: output += "\\t"
            case 0x20...0x7E: output.unicodeScalars.append(Unicode.Scalar(UInt8(unit)))
            default:
                let hex = String(unit, radix: 16)
                output += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            }
        }
        return output + "\""
    }

    /// `urllib.parse.quote(text)`: the UTF-8 bytes, letters, digits, `_.-~` and `/` kept, everything else `%XX`
    /// (upper-case hex; a space is `%20`, not `+`).
    package static func percentEncode(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "-"),
                UInt8(ascii: "~"), UInt8(ascii: "/"):
                output.append(byte)
            default:
                output += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// STS's `options` for a workforce pool's user project, as google-auth sends them:
    /// `quote(json.dumps({"userProject": project}))`, JSON with its default `": "` separator, percent-encoded (and
    /// form-encoded again in the request body).
    package static func stsOptions(userProject: String) -> String {
        percentEncode("{\"userProject\": \(jsonString(userProject))}")
    }
}
