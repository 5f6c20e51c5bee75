package import NIOCore

/// One RESP2 or RESP3 value, as read from a Redis (or Valkey) server.
///
/// RESP3 attributes (`|`) are read, bounded and dropped by the decoder: the protocol lets a client ignore them, and
/// nothing here uses them. A top-level error reply is thrown as ``RESPError/server(_:)``; errors nested in an array
/// (a `MULTI`/`EXEC` result, for example) stay values.
package enum RESPValue: Sendable, Hashable {
    /// `+OK`: a short status line.
    case simpleString(ByteBuffer)
    /// `-ERR …` (RESP2 and RESP3) or `!len` (RESP3 blob error): the whole message, code first.
    case error(ByteBuffer)
    /// `:42`.
    case integer(Int64)
    /// `$len`: binary-safe bytes; nil is RESP2's null bulk string `$-1`.
    case bulkString(ByteBuffer?)
    /// `*count`; nil is RESP2's null array `*-1`.
    case array([RESPValue]?)
    /// `_`: RESP3's single null.
    case null
    /// `#t` / `#f`.
    case boolean(Bool)
    /// `,1.5`, including `inf`, `-inf` and `nan`.
    case double(Double)
    /// `(` followed by decimal digits with an optional sign, kept as text: it may not fit any integer type.
    case bigNumber(String)
    /// `=len` with a three-letter format (`txt`, `mkd`) and its text.
    case verbatimString(format: String, text: ByteBuffer)
    /// `%count`: key/value pairs. A key sent twice keeps its last value.
    case map([RESPValue: RESPValue])
    /// `~count`: an unordered collection; duplicates collapse.
    case set(Set<RESPValue>)
    /// `>count`: out-of-band data (pub/sub messages, invalidations), never the reply to a command.
    case push([RESPValue])
}

extension RESPValue {
    /// The bytes of a simple, bulk or verbatim string; nil for anything else (and for a null bulk string).
    package var bytes: ByteBuffer? {
        switch self {
        case .simpleString(let buffer), .verbatimString(_, let buffer): buffer
        case .bulkString(let buffer): buffer
        default: nil
        }
    }

    /// The bytes of a simple, bulk or verbatim string as UTF-8 text (invalid sequences repaired).
    package var string: String? { bytes.map { String(buffer: $0) } }

    /// The value of an integer reply.
    package var integer: Int64? {
        if case .integer(let value) = self { return value }
        return nil
    }

    /// The elements of an array, set or push (a set in no particular order).
    package var elements: [RESPValue]? {
        switch self {
        case .array(let elements): elements
        case .set(let members): Array(members)
        case .push(let elements): elements
        default: nil
        }
    }

    /// Whether this is a null: RESP3's `_`, or RESP2's null bulk string or null array.
    package var isNull: Bool {
        switch self {
        case .null, .bulkString(nil), .array(nil): true
        default: false
        }
    }
}

extension RESPValue: ExpressibleByStringLiteral {
    /// A bulk string, so tests and callers can write `.map(["field": "value"])`.
    package init(stringLiteral value: String) { self = .bulkString(ByteBuffer(string: value)) }
}
