/// The file a configuration came from, and what its values may refer to.
public struct ConfigFile: Sendable {
    /// The path as the operator gave it, for messages.
    public let displayPath: String
    /// The directory relative file paths in the configuration are resolved against.
    public let directory: String
    /// The environment `${NAME}` placeholders are read from.
    public let environment: [String: String]
    /// Where warnings about this file's values go.
    package let diagnostics: ConfigDiagnostics

    /// Describes a configuration file at `path` (as given) with `environment` for `${NAME}`, as a plugin's test
    /// reads a `backend:` section of its own.
    public init(path: String, environment: [String: String]) {
        self.init(path: path, environment: environment, diagnostics: ConfigDiagnostics())
    }

    /// The same, with the warnings about its values going to `diagnostics`.
    package init(path: String, environment: [String: String], diagnostics: ConfigDiagnostics) {
        self.displayPath = path
        if let slash = path.lastIndex(of: "/") {
            let directory = String(path[..<slash])
            self.directory = directory.isEmpty ? "/" : directory
        } else {
            self.directory = "."
        }
        self.environment = environment
        self.diagnostics = diagnostics
    }

    /// `path` resolved against the configuration's directory unless it is absolute.
    public func resolve(_ path: String) -> String {
        path.hasPrefix("/") ? path : (directory == "." ? path : "\(directory)/\(path)")
    }
}
