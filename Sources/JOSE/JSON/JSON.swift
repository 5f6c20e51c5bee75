/// Strict JSON for tokens and key files (RFC 8259).
public enum JSON {
    /// Parses exactly one value: UTF-8, no trailing garbage, no duplicate member names in any object, nesting
    /// depth at most 32. Integers that fit `Int64` (no fraction or exponent) become `.integer`, other numbers
    /// `.double`. Throws `JSONError`.
    public static func parse(_ bytes: [UInt8]) throws -> JSONValue {
        var parser = JSONParser(bytes)
        return try parser.parseDocument()
    }

    /// Compact serialization in member order; strings escaped per RFC 8259 ("/" not escaped).
    public static func serialize(_ value: JSONValue) -> [UInt8] {
        var output: [UInt8] = []
        JSONSerializer.write(value, to: &output)
        return output
    }

    /// ``serialize(_:)`` for one line of a log file (the audit log, JSON log lines), which people and line-oriented
    /// tools read too: every character that could break or disguise the line there (DEL, C1 controls such as NEL,
    /// bidirectional overrides and other format characters, line and paragraph separators, other spaces, private-use
    /// and unassigned code points) is also escaped, as `\uXXXX`. It parses back to the same value.
    public static func serializeLine(_ value: JSONValue) -> [UInt8] {
        var output: [UInt8] = []
        JSONSerializer.write(value, to: &output, forLine: true)
        return output
    }
}
