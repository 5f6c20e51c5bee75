/// A scalar as written: its text and whether it was plain (unquoted). `"8080"` is a quoted string, never an int.
public struct YAMLScalar: Sendable, Hashable {
    /// The scalar's text after YAML unescaping and line folding.
    public let value: String
    /// Whether the scalar was written plain (no quotes, no `|` or `>` block style).
    public let isPlain: Bool
    /// The explicit tag if any (e.g. `tag:yaml.org,2002:str` for `!!str`), else nil.
    public let tag: String?

    /// Creates a scalar; the parser makes these, tests and callers may too.
    public init(value: String, isPlain: Bool, tag: String? = nil) {
        self.value = value
        self.isPlain = isPlain
        self.tag = tag
    }
}

/// A node of a parsed document with the mark where it starts.
public struct YAMLNode: Sendable {
    /// What a node holds.
    public enum Content: Sendable {
        /// A scalar.
        case scalar(YAMLScalar)
        /// A sequence, in document order.
        case sequence([YAMLNode])
        /// A mapping in document order; keys are scalars and unique.
        case mapping([(key: YAMLScalar, keyMark: Mark, value: YAMLNode)])
    }

    /// The node's content.
    public let content: Content
    /// Where the node starts (its first property or character), 1-based.
    public let mark: Mark

    /// Creates a node; the parser makes these, tests and callers may too.
    public init(content: Content, mark: Mark) {
        self.content = content
        self.mark = mark
    }
}

extension YAMLNode {
    /// The scalar if this node is one, else nil.
    public var scalar: YAMLScalar? {
        if case .scalar(let scalar) = content { return scalar }
        return nil
    }

    /// The items if this node is a sequence, else nil.
    public var sequence: [YAMLNode]? {
        if case .sequence(let items) = content { return items }
        return nil
    }

    /// The entries in document order if this node is a mapping, else nil.
    public var mapping: [(key: YAMLScalar, keyMark: Mark, value: YAMLNode)]? {
        if case .mapping(let entries) = content { return entries }
        return nil
    }

    /// The value for a key (plain or quoted) if this node is a mapping that has it, else nil.
    public subscript(key: String) -> YAMLNode? {
        mapping?.first { $0.key.value == key }?.value
    }

    /// A short name of the node's kind for error messages: `scalar`, `sequence` or `mapping`.
    public var kindName: String {
        switch content {
        case .scalar: "scalar"
        case .sequence: "sequence"
        case .mapping: "mapping"
        }
    }
}
