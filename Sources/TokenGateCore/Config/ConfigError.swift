public import YAML

/// A configuration problem, located: `config.yaml:14:7: providers.acme-rides.backend.keys: no such file`.
public struct ConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The configuration file as the operator named it.
    public let file: String
    /// Where in the file, when known.
    public let mark: Mark?
    /// The dotted key path (`providers.acme-rides.clients[0].name`), empty for the document itself.
    public let keyPath: String
    /// What is wrong, in one sentence. Never a secret.
    public let message: String

    /// Creates a located error.
    public init(file: String, mark: Mark?, keyPath: String, message: String) {
        self.file = file
        self.mark = mark
        self.keyPath = keyPath
        self.message = message
    }

    public var description: String {
        var text = file
        if let mark { text += ":\(mark)" }
        if !keyPath.isEmpty { text += ": \(keyPath)" }
        return text + ": " + message
    }
}
