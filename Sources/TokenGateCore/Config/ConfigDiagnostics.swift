import Synchronization

/// Warnings found while a configuration is parsed and assembled: things that work but are probably a mistake (a
/// private key where a public one suffices, plain HTTP to another host, one API key shared by two tenants). Each
/// is located like a ``ConfigError``. `check-config` prints them; `serve` logs them at start and on every reload.
package final class ConfigDiagnostics: Sendable {
    private let warnings = Mutex<[ConfigError]>([])

    /// An empty collection.
    package init() {}

    /// Every warning so far, in the order found.
    package var all: [ConfigError] { warnings.withLock { $0 } }

    func add(_ warning: ConfigError) { warnings.withLock { $0.append(warning) } }
}

extension ConfigNode {
    /// Records a located warning about this node (nothing fails).
    package func warn(_ message: String) {
        file.diagnostics.add(error(message))
    }
}
