import Synchronization

/// Warnings found while a configuration is parsed and assembled: things that work but are probably a mistake (a
/// private key where a public one suffices, plain HTTP to another host, one API key shared by two tenants). Each
/// is located like a ``ConfigError``. `check-config` prints them; `serve` logs them at start and on every reload.
public final class ConfigDiagnostics: Sendable {
    private let warnings = Mutex<[ConfigError]>([])

    /// An empty collection.
    public init() {}

    /// Every warning so far, in the order found.
    public var all: [ConfigError] { warnings.withLock { $0 } }

    func add(_ warning: ConfigError) { warnings.withLock { $0.append(warning) } }
}

extension ConfigNode {
    /// Records a located warning about this node (nothing fails).
    public func warn(_ message: String) {
        file.diagnostics.add(error(message))
    }
}
