public import Logging
import Synchronization

/// Keeps every log entry a logger emits, so tests can check what was (and was never) logged.
public final class LogRecorder: Sendable {
    /// One log entry, flattened to text.
    public struct Entry: Sendable {
        /// Its level.
        public var level: Logger.Level
        /// The message and every metadata value, as one string.
        public var text: String
    }

    private let entries = Mutex<[Entry]>([])

    /// Creates an empty recorder.
    public init() {}

    /// A logger (at `trace`) whose entries land here.
    public var logger: Logger {
        var logger = Logger(label: "tokengate-test") { _ in Handler(recorder: self) }
        logger.logLevel = .trace
        return logger
    }

    /// Everything logged so far.
    public var all: [Entry] { entries.withLock { $0 } }

    fileprivate func append(_ entry: Entry) { entries.withLock { $0.append(entry) } }

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
            let text = ([event.message.description] + merged.map { "\($0.key)=\($0.value)" }).joined(separator: " ")
            recorder.append(Entry(level: event.level, text: text))
        }
    }
}
