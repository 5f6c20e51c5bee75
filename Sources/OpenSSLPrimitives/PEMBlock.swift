/// One "-----BEGIN label-----" … "-----END label-----" block.
package struct PEMBlock {
    package let label: String
    package let text: String

    /// The first block that is not "EC PARAMETERS" (which `openssl ecparam -genkey` writes before the key).
    package static func first(in text: String) -> PEMBlock? {
        let bytes = Array(text.utf8)
        var searchFrom = 0
        while let block = next(in: bytes, from: &searchFrom) {
            if block.label != "EC PARAMETERS" { return block }
        }
        return nil
    }

    private static func next(in bytes: [UInt8], from position: inout Int) -> PEMBlock? {
        let begin = Array("-----BEGIN ".utf8)
        guard let start = bytes[position...].firstRange(of: begin) else { return nil }
        let labelStart = start.upperBound
        guard let labelEnd = bytes[labelStart...].firstRange(of: Array("-----".utf8)) else { return nil }
        let label = String(decoding: bytes[labelStart..<labelEnd.lowerBound], as: UTF8.self)
        let end = Array("-----END \(label)-----".utf8)
        guard let endRange = bytes[labelEnd.upperBound...].firstRange(of: end) else { return nil }
        let block = String(decoding: bytes[start.lowerBound..<endRange.upperBound], as: UTF8.self)
        position = endRange.upperBound
        return PEMBlock(label: label, text: block + "\n")
    }
}
