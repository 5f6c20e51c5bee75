/// The `audit:` section: where one JSON line per issued token goes.
///
/// ```yaml
/// audit:
///   path: /var/log/tokengate/audit.jsonl   # created 0600, appended to, reopened on SIGHUP (log rotation)
/// # or
/// audit:
///   stdout: true                           # standard output, for a container's log collector
/// ```
package enum AuditSettings: Sendable, Equatable {
    /// A file, resolved against the configuration file's folder.
    case file(path: String)
    /// Standard output.
    case standardOutput

    static func parse(_ node: ConfigNode) throws -> AuditSettings {
        let mapping = try node.mapping(allowedKeys: ["path", "stdout"])
        switch (mapping.optional("path"), mapping.optional("stdout")) {
        case (let path?, nil):
            return .file(path: try path.path())
        case (nil, let stdout?):
            guard try stdout.bool() else { throw stdout.error("set stdout: true, or give a path instead") }
            return .standardOutput
        case (.some, .some):
            throw node.error("give either path or stdout, not both")
        case (nil, nil):
            throw node.error("give a path (a file) or stdout: true")
        }
    }
}
