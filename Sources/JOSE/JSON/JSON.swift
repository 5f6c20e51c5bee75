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
}
