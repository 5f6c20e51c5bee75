import Foundation

extension ConfigNode {
    /// The bytes of the file this value names (relative to the configuration file), or a located error.
    package func fileContents() throws -> [UInt8] {
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

extension ConfigNode {
    /// Why the private-key file this value names is unsafe, or nil: a key readable or writable by anyone but its
    /// owner may already be someone else's, so it is refused as ssh refuses such a key (unless the configuration
    /// explicitly allows it).
    package func privateKeyFilePermissionProblem() throws -> String? {
        let path = try path()
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
            let mode = (attributes[.posixPermissions] as? NSNumber)?.intValue
        else { return nil }
        guard mode & 0o077 != 0 else { return nil }
        return "the private key file \(path) is accessible to others (mode \(String(mode & 0o777, radix: 8))); chmod 600 it"
    }
}
