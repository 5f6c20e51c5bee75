public import YAML

/// A YAML node together with where it sits: file, line:column and key path. Every accessor throws a
/// `ConfigError` that names all three, so an operator can go straight to the mistake.
public struct ConfigNode: Sendable {
    /// The underlying YAML node.
    public let yaml: YAMLNode
    /// The dotted key path of this node.
    public let keyPath: String
    /// The file it came from.
    public let file: ConfigFile
    /// Where the key that introduced this node starts, for errors about the key itself.
    public let keyMark: Mark?

    /// Wraps a document's root node.
    public init(root: YAMLNode, file: ConfigFile) {
        self.init(yaml: root, keyPath: "", file: file)
    }

    /// Parses configuration text from `file` into its root node; YAML errors become located `ConfigError`s.
    public static func parse(_ bytes: [UInt8], file: ConfigFile) throws(ConfigError) -> ConfigNode {
        let root: YAMLNode?
        do {
            root = try YAMLParser().parse(bytes)
        } catch {
            throw ConfigError(file: file.displayPath, mark: error.mark, keyPath: "", message: error.message)
        }
        guard let root else { throw ConfigError(file: file.displayPath, mark: nil, keyPath: "", message: "the file is empty") }
        return ConfigNode(root: root, file: file)
    }

    init(yaml: YAMLNode, keyPath: String, file: ConfigFile, keyMark: Mark? = nil) {
        self.yaml = yaml
        self.keyPath = keyPath
        self.file = file
        self.keyMark = keyMark
    }

    /// Where this node starts.
    public var mark: Mark { yaml.mark }

    /// An error located at this node.
    public func error(_ message: String) -> ConfigError {
        ConfigError(file: file.displayPath, mark: mark, keyPath: keyPath, message: message)
    }

    /// An error about the key that introduced this node (a bad provider ID, an unknown token type), located there.
    public func keyError(_ message: String) -> ConfigError {
        ConfigError(file: file.displayPath, mark: keyMark ?? mark, keyPath: keyPath, message: message)
    }

    /// This node as a mapping whose keys must all be in `allowedKeys` (typos fail at load).
    public func mapping(allowedKeys: Set<String>) throws -> ConfigMapping {
        guard case .mapping(let entries) = yaml.content else { throw error("expected a mapping, got \(kindName)") }
        var children: [(key: String, node: ConfigNode)] = []
        for entry in entries {
            let child = ConfigNode(yaml: entry.value, keyPath: childPath(entry.key.value), file: file, keyMark: entry.keyMark)
            guard allowedKeys.contains(entry.key.value) else {
                throw child.keyError("unknown key; expected one of: \(allowedKeys.sorted().joined(separator: ", "))")
            }
            children.append((entry.key.value, child))
        }
        return ConfigMapping(node: self, children: children)
    }

    /// This node as a mapping with free-form keys (provider IDs, token types), in document order.
    public func entries() throws -> [(key: String, node: ConfigNode)] {
        guard case .mapping(let entries) = yaml.content else { throw error("expected a mapping, got \(kindName)") }
        return entries.map {
            ($0.key.value, ConfigNode(yaml: $0.value, keyPath: childPath($0.key.value), file: file, keyMark: $0.keyMark))
        }
    }

    /// This node as a sequence.
    public func sequence() throws -> [ConfigNode] {
        guard case .sequence(let items) = yaml.content else { throw error("expected a list, got \(kindName)") }
        return items.enumerated().map { ConfigNode(yaml: $1, keyPath: "\(keyPath)[\($0)]", file: file) }
    }

    /// This mapping without the entries whose keys are in `keys` (a section whose keys two owners share), or this
    /// node itself when it is not a mapping.
    func removing(_ keys: Set<String>) -> ConfigNode {
        guard case .mapping(let entries) = yaml.content else { return self }
        let kept = entries.filter { !keys.contains($0.key.value) }
        return ConfigNode(yaml: YAMLNode(content: .mapping(kept), mark: yaml.mark), keyPath: keyPath, file: file, keyMark: keyMark)
    }

    private func childPath(_ key: String) -> String { keyPath.isEmpty ? key : "\(keyPath).\(key)" }

    var kindName: String {
        switch yaml.content {
        case .mapping: "a mapping"
        case .sequence: "a list"
        case .scalar(let scalar): scalar.isPlain && scalar.value.isEmpty ? "nothing" : "a scalar"
        }
    }
}

/// A validated mapping: look keys up by name; every key present was in the allowed set.
public struct ConfigMapping: Sendable {
    /// The mapping node itself.
    public let node: ConfigNode
    /// The entries in document order.
    public let children: [(key: String, node: ConfigNode)]

    /// The value for `key`, or `nil` when absent.
    public func optional(_ key: String) -> ConfigNode? {
        children.first { $0.key == key }?.node
    }

    /// The value for `key`, or an error at the mapping naming the missing key.
    public func required(_ key: String) throws -> ConfigNode {
        guard let child = optional(key) else {
            let path = node.keyPath.isEmpty ? key : "\(node.keyPath).\(key)"
            throw ConfigError(file: node.file.displayPath, mark: node.mark, keyPath: path, message: "missing required key")
        }
        return child
    }
}
