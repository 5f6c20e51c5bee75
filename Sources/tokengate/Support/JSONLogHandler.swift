import JOSE
import Logging
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// `server.logFormat: json`: one JSON object per line on standard error, for log shippers:
///
/// ```json
/// {"time":"2026-11-22T15:04:05.123Z","level":"info","label":"tokengate","message":"provider loaded","metadata":{"provider":"acme-rides"}}
/// ```
///
/// Every line is one `write(2)`, so lines from concurrent tasks never interleave.
struct JSONLogHandler: LogHandler {
    let label: String
    var logLevel: Logger.Level = .info
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?

    private static let output = Mutex<Int32>(STDERR_FILENO)

    init(label: String, metadataProvider: Logger.MetadataProvider? = nil) {
        self.label = label
        self.metadataProvider = metadataProvider
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { _, new in new } }
        if let extra = event.metadata { merged.merge(extra) { _, new in new } }
        var object: JSONObject = [
            "time": .string(Self.timestamp()),
            "level": .string(event.level.rawValue),
            "label": .string(label),
            "message": .string(event.message.description),
        ]
        if !merged.isEmpty { object["metadata"] = Self.json(.dictionary(merged)) }
        let line = JSON.serializeLine(.object(object)) + [UInt8(ascii: "\n")]
        Self.output.withLock { descriptor in
            _ = line.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        }
    }

    private static func json(_ value: Logger.MetadataValue) -> JSONValue {
        switch value {
        case .string(let text): .string(text)
        case .stringConvertible(let value): .string(value.description)
        case .array(let values): .array(values.map(json))
        case .dictionary(let values):
            .object(values.sorted { $0.key < $1.key }.reduce(into: JSONObject()) { object, entry in object[entry.key] = json(entry.value) })
        }
    }

    /// UTC with milliseconds, RFC 3339.
    private static func timestamp() -> String {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        var seconds = now.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        var buffer = [CChar](repeating: 0, count: 32)
        let length = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%S", &parts)
        let milliseconds = now.tv_nsec / 1_000_000
        let fraction = milliseconds < 10 ? "00\(milliseconds)" : milliseconds < 100 ? "0\(milliseconds)" : "\(milliseconds)"
        return String(decoding: buffer[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self) + ".\(fraction)Z"
    }
}
