/// A JSON value as the strict token parser produces it.
public enum JSONValue: Sendable, Hashable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A string.
    case string(String)
    /// A number without fraction or exponent that fits `Int64`.
    case integer(Int64)
    /// Any other number.
    case double(Double)
    /// An array.
    case array([JSONValue])
    /// An object with its member order kept.
    case object(JSONObject)

    /// The string, if this is one.
    public var stringValue: String? {
        if case .string(let value) = self { value } else { nil }
    }

    /// The integer, if this is one.
    public var integerValue: Int64? {
        if case .integer(let value) = self { value } else { nil }
    }

    /// The Boolean, if this is one.
    public var boolValue: Bool? {
        if case .bool(let value) = self { value } else { nil }
    }

    /// The elements, if this is an array.
    public var arrayValue: [JSONValue]? {
        if case .array(let value) = self { value } else { nil }
    }

    /// The object, if this is one.
    public var objectValue: JSONObject? {
        if case .object(let value) = self { value } else { nil }
    }
}

extension JSONValue: ExpressibleByStringLiteral, ExpressibleByIntegerLiteral, ExpressibleByBooleanLiteral,
    ExpressibleByArrayLiteral, ExpressibleByNilLiteral, ExpressibleByFloatLiteral
{
    /// A `.string`.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An `.integer`.
    public init(integerLiteral value: Int64) { self = .integer(value) }
    /// A `.bool`.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// An `.array`.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// `.null`.
    public init(nilLiteral: ()) { self = .null }
    /// A `.double`.
    public init(floatLiteral value: Double) { self = .double(value) }
}
