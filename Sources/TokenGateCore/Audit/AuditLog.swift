package import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// Where issued tokens are recorded: one JSON line per token a backend issued (a cache hit is not an issuance).
///
/// A file is opened for appending, created with mode 0600 (the lines name callers and contexts), and reopened by
/// ``reopen(_:)``: on SIGHUP a rotated file is let go and a new one started at the same path. Each line is one
/// `write(2)` on an `O_APPEND` descriptor, so lines from concurrent mints never interleave.
package final class AuditLog: Sendable {
    private let state: Mutex<Sink>
    private let logger: Logger

    private struct Sink {
        var settings: AuditSettings?
        var descriptor: Int32 = -1
        var failedWrites = 0
    }

    /// Records nothing.
    package static func disabled(logger: Logger) -> AuditLog { AuditLog(sink: Sink(settings: nil), logger: logger) }

    private init(sink: Sink, logger: Logger) {
        state = Mutex(sink)
        self.logger = logger
    }

    /// An audit log writing where `settings` says (nothing when nil); throws when the file cannot be opened.
    package convenience init(_ settings: AuditSettings?, logger: Logger) throws(AuditLogError) {
        self.init(sink: Sink(settings: settings, descriptor: try Self.openDescriptor(settings)), logger: logger)
    }

    /// Where it writes now.
    package var settings: AuditSettings? { state.withLock { $0.settings } }

    /// Opens `settings`' destination anew (a rotated file is let go) and switches to it; on failure the current
    /// destination stays and the error says why.
    package func reopen(_ settings: AuditSettings?) throws(AuditLogError) {
        let descriptor = try Self.openDescriptor(settings)
        let previous = state.withLock { sink in
            defer {
                sink.settings = settings
                sink.descriptor = descriptor
            }
            return sink.descriptor
        }
        if previous > STDERR_FILENO { close(previous) }
    }

    /// Writes `record` as one line. With no destination the record is not even made: its fingerprint is a digest
    /// of the token, and it is made on every mint.
    func record(_ record: @autoclosure () -> AuditRecord) {
        guard state.withLock({ $0.descriptor >= 0 }) else { return }
        let record = record()
        let line = record.line
        let failed = state.withLock { sink -> Bool in
            guard sink.descriptor >= 0 else { return false }
            let written = line.withUnsafeBytes { write(sink.descriptor, $0.baseAddress, $0.count) }
            guard written != line.count else { return false }
            sink.failedWrites += 1
            // The first failure and then every 1000th: a full disk must not also flood the log.
            return sink.failedWrites % 1000 == 1
        }
        if failed {
            logger.error("the audit log could not be written", metadata: ["errno": "\(errno)", "fingerprint": "\(record.fingerprint)"])
        }
    }

    private static func openDescriptor(_ settings: AuditSettings?) throws(AuditLogError) -> Int32 {
        switch settings {
        case nil: return -1
        case .standardOutput: return STDOUT_FILENO
        case .file(let path):
            let descriptor = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0o600)
            guard descriptor >= 0 else { throw AuditLogError(path: path, errno: errno) }
            return descriptor
        }
    }

    deinit {
        let descriptor = state.withLock { $0.descriptor }
        if descriptor > STDERR_FILENO { close(descriptor) }
    }
}

/// The audit file could not be opened.
package struct AuditLogError: Error, CustomStringConvertible {
    /// The file.
    package let path: String
    /// Why, as `errno`.
    package let errno: Int32

    package var description: String { "cannot open the audit log \(path): \(String(cString: strerror(errno)))" }
}
