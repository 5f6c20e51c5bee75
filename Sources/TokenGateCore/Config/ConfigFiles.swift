import Foundation

extension ConfigNode {
    /// The bytes of the file this value names (relative to the configuration file), or a located error.
    public func fileContents() throws -> [UInt8] {
        let node = self
        let path = try node.path()
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) else {
            throw node.error("no such file: \(path)")
        }
        guard !isDirectory.boolValue else { throw node.error("is a directory: \(path)") }
        guard let data = FileManager.default.contents(atPath: path) else { throw node.error("cannot read \(path)") }
        return [UInt8](data)
    }
}

/// Lower-case hexadecimal.
public enum HexBytes {
    /// Decodes an even number of hex digits, or returns `nil`.
    public static func decode(_ text: String) -> [UInt8]? {
        let digits = Array(text.utf8)
        guard digits.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(digits.count / 2)
        var index = 0
        while index < digits.count {
            guard let high = value(digits[index]), let low = value(digits[index + 1]) else { return nil }
            bytes.append(high << 4 | low)
            index += 2
        }
        return bytes
    }

    /// Encodes bytes as lower-case hex.
    public static func encode(_ bytes: [UInt8]) -> String {
        let alphabet = Array("0123456789abcdef".utf8)
        var output: [UInt8] = []
        output.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            output.append(alphabet[Int(byte >> 4)])
            output.append(alphabet[Int(byte & 0x0F)])
        }
        return String(decoding: output, as: UTF8.self)
    }

    private static func value(_ digit: UInt8) -> UInt8? {
        switch digit {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): digit - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): digit - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): digit - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

extension ConfigNode {
    /// Why the private-key file this value names is unsafe, or nil: a key readable or writable by anyone but its
    /// owner may already be someone else's, so it is refused as ssh refuses such a key (unless the configuration
    /// explicitly allows it).
    public func privateKeyFilePermissionProblem() throws -> String? {
        let path = try path()
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
            let mode = (attributes[.posixPermissions] as? NSNumber)?.intValue
        else { return nil }
        guard mode & 0o077 != 0 else { return nil }
        return "the private key file \(path) is accessible to others (mode \(String(mode & 0o777, radix: 8))); chmod 600 it"
    }
}
