import Foundation

/// A directory for one test's files, removed afterwards.
public struct TemporaryDirectory: Sendable {
    /// Its absolute path.
    public let path: String

    /// Creates a fresh, empty directory.
    public init() throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("tokengate-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    /// Writes `bytes` to `name` inside the directory (creating subdirectories) and returns the full path. Files are
    /// mode 0600, as a key file must be.
    @discardableResult
    public func write(_ name: String, _ bytes: [UInt8]) throws -> String {
        let full = "\(path)/\(name)"
        try FileManager.default.createDirectory(
            atPath: (full as NSString).deletingLastPathComponent,
            withIntermediateDirectories: true
        )
        try Data(bytes).write(to: URL(fileURLWithPath: full))
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: full)
        return full
    }

    /// Writes UTF-8 text.
    @discardableResult
    public func write(_ name: String, _ text: String) throws -> String { try write(name, Array(text.utf8)) }

    /// Removes the directory and everything in it.
    public func remove() { try? FileManager.default.removeItem(atPath: path) }

    /// Runs `body` with a fresh directory and removes it afterwards, whatever happens.
    public static func with<Result>(_ body: (TemporaryDirectory) async throws -> Result) async throws -> Result {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        return try await body(directory)
    }
}
