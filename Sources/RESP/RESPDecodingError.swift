/// Why bytes from the server were not a RESP value this client accepts. The connection that read them is closed:
/// after a framing error nothing that follows can be trusted.
package enum RESPDecodingError: Error, Sendable, Hashable {
    /// The first byte of a value is not a RESP2 or RESP3 type marker (or is a streamed type, `$?`, `*?`, unused here).
    case unknownType(UInt8)
    /// A line (simple string, error, number, length) ran past the limit without its `\r\n`.
    case lineTooLong(limit: Int)
    /// A `\r` not followed by `\n`, or a bulk string not followed by `\r\n`.
    case badTerminator
    /// A length or count that is not a decimal integer, or is negative other than `-1` where RESP2 allows a null.
    case invalidLength(String)
    /// A bulk, blob error or verbatim string longer than the limit.
    case bulkTooLong(length: Int, limit: Int)
    /// An aggregate with more elements (a map: more pairs) than the limit.
    case aggregateTooLarge(count: Int, limit: Int)
    /// Aggregates nested deeper than the limit.
    case nestedTooDeep(limit: Int)
    /// A value still incomplete after this many bytes (`Limits.maxPendingBytes`): an array of many large strings.
    case valueTooLarge(limit: Int)
    /// An integer, double, boolean, big number or verbatim string whose text is malformed.
    case invalidValue(String)
}
