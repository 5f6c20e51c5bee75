import Foundation
import Synchronization

/// A directory for one test's files, removed afterwards: by `remove()` or `with`, or else when the test process
/// exits.
package struct TemporaryDirectory: Sendable {
    /// Its absolute path.
    package let path: String

    /// Creates a fresh, empty directory, `prefix-UUID` in the system's temporary directory.
    package init(prefix: String = "tokengate") throws {
        path = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        LeftoverDirectories.register(path)
    }

    /// Writes `bytes` to `name` inside the directory (creating subdirectories) and returns the full path. Files are
    /// mode 0600, as a key file must be.
    @discardableResult
    package func write(_ name: String, _ bytes: [UInt8]) throws -> String {
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
    package func write(_ name: String, _ text: String) throws -> String { try write(name, Array(text.utf8)) }

    /// Removes the directory and everything in it.
    package func remove() {
        try? FileManager.default.removeItem(atPath: path)
        LeftoverDirectories.forget(path)
    }

    /// Runs `body` with a fresh directory and removes it afterwards, whatever happens.
    package static func with<Result>(_ body: (TemporaryDirectory) async throws -> Result) async throws -> Result {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        return try await body(directory)
    }
}

/// The directories not yet removed, removed when the process exits. A suite's directory or a fixture's lives as long
/// as a test uses it, and a server started on it may read it until the test ends; nothing in Swift marks that point
/// (an object's `deinit` may run after its last use, while the server still reads), so exit is the one moment at
/// which no test needs them. Without it every run of the suite left about 120 directories in /tmp.
enum LeftoverDirectories {
    // Made on first use, which also installs the removal at exit.
    private static let paths: Mutex<Set<String>> = {
        atexit { LeftoverDirectories.removeAll() }
        return Mutex([])
    }()

    static func register(_ path: String) {
        _ = paths.withLock { $0.insert(path) }
    }

    static func forget(_ path: String) {
        _ = paths.withLock { $0.remove(path) }
    }

    private static func removeAll() {
        for path in paths.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: path) }
    }
}
