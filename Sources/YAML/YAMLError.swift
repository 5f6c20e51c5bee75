/// Why a document was refused. Every case carries the mark of the offending spot, except size and encoding errors.
public enum YAMLError: Error, Sendable, Equatable, CustomStringConvertible {
    /// libyaml's problem text (with its context, if any) at the problem mark.
    case syntax(String, Mark)
    /// An alias (`*ref`).
    case alias(Mark)
    /// An anchor (`&ref`).
    case anchor(Mark)
    /// A merge key (plain `<<`).
    case mergeKey(Mark)
    /// A key that appears twice in one mapping, at the second occurrence.
    case duplicateKey(String, Mark)
    /// A mapping key that is a sequence or a mapping.
    case nonScalarKey(Mark)
    /// A second document in the stream, at its start.
    case multipleDocuments(Mark)
    /// Collections nested deeper than the limit, at the first collection past it.
    case tooDeep(limit: Int, Mark)
    /// Input bytes over the cap.
    case tooLarge(limit: Int)
    /// The input is not valid UTF-8.
    case invalidUTF8

    /// Where the problem is, if the error has a position.
    public var mark: Mark? {
        switch self {
        case .syntax(_, let mark), .alias(let mark), .anchor(let mark), .mergeKey(let mark),
            .duplicateKey(_, let mark), .nonScalarKey(let mark), .multipleDocuments(let mark),
            .tooDeep(_, let mark):
            mark
        case .tooLarge, .invalidUTF8:
            nil
        }
    }

    /// The message without the mark.
    public var message: String {
        switch self {
        case .syntax(let problem, _): "syntax: \(problem)"
        case .alias: "aliases are not allowed"
        case .anchor: "anchors are not allowed"
        case .mergeKey: "merge keys ('<<') are not allowed"
        case .duplicateKey(let key, _): "duplicate key '\(key)'"
        case .nonScalarKey: "mapping keys must be scalars"
        case .multipleDocuments: "only one document is allowed"
        case .tooDeep(let limit, _): "nesting deeper than \(limit) levels"
        case .tooLarge(let limit): "input larger than \(limit) bytes"
        case .invalidUTF8: "input is not valid UTF-8"
        }
    }

    /// `line:column: message` (mark first, like compilers), or just the message when there is no mark.
    public var description: String {
        if let mark { "\(mark): \(message)" } else { message }
    }
}
