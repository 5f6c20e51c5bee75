internal import CYAML

/// Builds one document from libyaml events with an explicit stack: no recursion on input depth.
/// Every string is copied out of the event at once, so nothing points into libyaml memory after `consume` returns.
struct Builder {
    /// An open collection.
    private struct Frame {
        let isMapping: Bool
        let mark: Mark
        var items: [YAMLNode] = []
        var entries: [(key: YAMLScalar, keyMark: Mark, value: YAMLNode)] = []
        var keys: Set<String> = []
        var pendingKey: (key: YAMLScalar, mark: Mark)?
    }

    private let maxDepth: Int
    private var stack: [Frame] = []
    private var documents = 0
    /// The finished document's root, once its last node closed.
    private(set) var root: YAMLNode?

    init(maxDepth: Int) {
        self.maxDepth = maxDepth
    }

    /// Folds one event into the document (stream and document end events are no-ops).
    mutating func consume(_ event: UnsafePointer<yaml_event_t>) throws(YAMLError) {
        let mark = Mark(event.pointee.start_mark)
        switch event.pointee.type {
        case YAML_DOCUMENT_START_EVENT:
            documents += 1
            if documents > 1 { throw .multipleDocuments(mark) }
        case YAML_ALIAS_EVENT:
            throw .alias(mark)
        case YAML_SCALAR_EVENT:
            let data = event.pointee.data.scalar
            if data.anchor != nil { throw .anchor(mark) }
            let value = String(decoding: UnsafeBufferPointer(start: data.value, count: data.length), as: UTF8.self)
            let tag = data.tag.map { String(cString: $0) }
            let scalar = YAMLScalar(value: value, isPlain: data.style == YAML_PLAIN_SCALAR_STYLE, tag: tag)
            try attach(YAMLNode(content: .scalar(scalar), mark: mark))
        case YAML_SEQUENCE_START_EVENT:
            if event.pointee.data.sequence_start.anchor != nil { throw .anchor(mark) }
            try open(isMapping: false, at: mark)
        case YAML_MAPPING_START_EVENT:
            if event.pointee.data.mapping_start.anchor != nil { throw .anchor(mark) }
            try open(isMapping: true, at: mark)
        case YAML_SEQUENCE_END_EVENT, YAML_MAPPING_END_EVENT:
            guard let frame = stack.popLast() else { return }  // libyaml balances these; nothing to close
            let content: YAMLNode.Content = frame.isMapping ? .mapping(frame.entries) : .sequence(frame.items)
            try attach(YAMLNode(content: content, mark: frame.mark))
        default:
            break  // stream start/end, document end, and YAML_NO_EVENT carry nothing
        }
    }

    private mutating func open(isMapping: Bool, at mark: Mark) throws(YAMLError) {
        if let top = stack.last, top.isMapping, top.pendingKey == nil { throw .nonScalarKey(mark) }
        if stack.count >= maxDepth { throw .tooDeep(limit: maxDepth, mark) }
        stack.append(Frame(isMapping: isMapping, mark: mark))
    }

    /// Adds a finished node to the innermost open collection, or makes it the root.
    private mutating func attach(_ node: YAMLNode) throws(YAMLError) {
        let top = stack.count - 1
        guard top >= 0 else {
            root = node
            return
        }
        guard stack[top].isMapping else {
            stack[top].items.append(node)
            return
        }
        if let pending = stack[top].pendingKey {
            stack[top].entries.append((key: pending.key, keyMark: pending.mark, value: node))
            stack[top].pendingKey = nil
            return
        }
        // A key: collections were refused in `open`, so this is a scalar.
        guard case .scalar(let key) = node.content else { throw .nonScalarKey(node.mark) }
        if key.isPlain && key.value == "<<" { throw .mergeKey(node.mark) }
        if !stack[top].keys.insert(key.value).inserted { throw .duplicateKey(key.value, node.mark) }
        stack[top].pendingKey = (key: key, mark: node.mark)
    }
}

extension Mark {
    /// Converts libyaml's 0-based mark.
    init(_ mark: yaml_mark_t) {
        self.init(line: Int(mark.line) + 1, column: Int(mark.column) + 1)
    }
}
