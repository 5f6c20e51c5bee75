internal import CYAML

/// A strict YAML reader: one document, no aliases, anchors, merge keys or duplicate keys, bounded size and depth.
public struct YAMLParser: Sendable {
    /// The deepest nesting of sequences and mappings accepted.
    public var maxDepth: Int = 64
    /// The largest input accepted, in bytes.
    public var maxBytes: Int = 1 << 20

    /// Creates a parser with the default limits.
    public init() {}

    /// Parses exactly one document. Returns nil for an empty stream (no document or only comments).
    public func parse(_ text: String) throws(YAMLError) -> YAMLNode? {
        try parse(Array(text.utf8))
    }

    /// Parses exactly one document from UTF-8 bytes. Returns nil for an empty stream (no document or only comments).
    public func parse(_ bytes: [UInt8]) throws(YAMLError) -> YAMLNode? {
        guard bytes.count <= maxBytes else { throw .tooLarge(limit: maxBytes) }
        guard !bytes.isEmpty else { return nil }
        guard String(validating: bytes, as: UTF8.self) != nil else { throw .invalidUTF8 }
        // All libyaml state lives and dies here; the input buffer outlives the whole event loop.
        return try bytes.withUnsafeBufferPointer { (whole) throws(YAMLError) -> YAMLNode? in
            // libyaml counts a byte order mark as a column; editors do not. Hide it so marks match what people see.
            let input = whole.starts(with: [0xEF, 0xBB, 0xBF]) ? UnsafeBufferPointer(rebasing: whole.dropFirst(3)) : whole
            guard !input.isEmpty else { return nil }
            let parser = UnsafeMutablePointer<yaml_parser_t>.allocate(capacity: 1)
            defer { parser.deallocate() }
            guard yaml_parser_initialize(parser) == 1 else { throw .syntax("out of memory", Mark(line: 1, column: 1)) }
            defer { yaml_parser_delete(parser) }
            yaml_parser_set_encoding(parser, YAML_UTF8_ENCODING)
            yaml_parser_set_input_string(parser, input.baseAddress, input.count)

            let event = UnsafeMutablePointer<yaml_event_t>.allocate(capacity: 1)
            defer { event.deallocate() }
            var builder = Builder(maxDepth: maxDepth)
            while true {
                guard yaml_parser_parse(parser, event) == 1 else { throw YAMLError(parser.pointee, input: input) }
                defer { yaml_event_delete(event) }
                if event.pointee.type == YAML_STREAM_END_EVENT { break }
                try builder.consume(event)
            }
            return builder.root
        }
    }
}

extension YAMLError {
    /// libyaml's problem (and context) at its problem mark, made 1-based.
    init(_ parser: yaml_parser_t, input: UnsafeBufferPointer<UInt8>) {
        let problem = parser.problem.map { String(cString: $0) } ?? "unknown error"
        let text = parser.context.map { "\(problem) (\(String(cString: $0)))" } ?? problem
        switch parser.error {
        case YAML_READER_ERROR:
            // Reader errors set only a byte offset, not a mark.
            self = .syntax(text, Mark(offset: parser.problem_offset, in: input))
        case YAML_MEMORY_ERROR:
            self = .syntax("out of memory", Mark(parser.mark))
        default:
            self = .syntax(text, Mark(parser.problem_mark))
        }
    }
}

extension Mark {
    /// The 1-based line and column (in characters) of a byte offset in UTF-8 input.
    init(offset: Int, in input: UnsafeBufferPointer<UInt8>) {
        var line = 1
        var column = 1
        for byte in input.prefix(offset) {
            if byte == UInt8(ascii: "\n") {
                line += 1
                column = 1
            } else if byte & 0xC0 != 0x80 {
                column += 1
            }
        }
        self.init(line: line, column: column)
    }
}
