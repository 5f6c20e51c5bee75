package import Logging
import Synchronization

/// Keeps every log entry a logger emits, so tests can check what was (and was never) logged, or await an entry
/// instead of sleeping.
package final class LogRecorder: Sendable {
    /// One log entry.
    package struct Entry: Sendable, CustomStringConvertible {
        /// Its level.
        package var level: Logger.Level
        /// Its message.
        package var message: String
        /// Its metadata (the logger's and the entry's), each value as text.
        package var metadata: [String: String]

        /// The message, then every metadata value as `key=value` sorted by key: what "never logs a token" checks read.
        package var text: String {
            ([message] + metadata.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }).joined(separator: " ")
        }

        /// The level, then ``text``: the entry as one line.
        package var description: String { "\(level) \(text)" }
    }

    private let entries = Mutex<[Entry]>([])
    private let continuation: AsyncStream<Entry>.Continuation
    /// Every entry, from the first, as it is logged.
    package let stream: AsyncStream<Entry>

    /// Creates an empty recorder.
    package init() { (stream, continuation) = AsyncStream.makeStream(of: Entry.self) }

    /// A logger (at `trace`) whose entries land here.
    package var logger: Logger {
        var logger = Logger(label: "tokengate-test") { _ in Handler(recorder: self) }
        logger.logLevel = .trace
        return logger
    }

    /// Everything logged so far.
    package var all: [Entry] { entries.withLock { $0 } }

    /// Everything logged so far, one line each (``Entry/description``).
    package var lines: [String] { all.map(\.description) }

    fileprivate func append(_ entry: Entry) {
        entries.withLock { $0.append(entry) }
        continuation.yield(entry)
    }

    private struct Handler: LogHandler {
        let recorder: LogRecorder
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { $1 }
            recorder.append(Entry(level: event.level, message: event.message.description, metadata: merged.mapValues { "\($0)" }))
        }
    }
}
