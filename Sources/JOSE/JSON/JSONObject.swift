/// A JSON object that keeps member order (as parsed or inserted). Duplicate names are impossible by construction:
/// setting an existing name replaces its value in place.
///
/// Equality and hashing ignore order: two objects are equal when they hold the same names with equal values.
public struct JSONObject: Sendable, Hashable, Sequence, ExpressibleByDictionaryLiteral {
    /// One member.
    public typealias Element = (key: String, value: JSONValue)

    private var members: [Member] = []

    private struct Member: Sendable, Hashable {
        var key: String
        var value: JSONValue
    }

    /// An empty object.
    public init() {}

    /// An object with these members in this order; a repeated name keeps its first position and last value.
    public init(_ members: KeyValuePairs<String, JSONValue>) {
        for (key, value) in members { self[key] = value }
    }

    /// Same as `init(_:)`, from a literal.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        for (key, value) in elements { self[key] = value }
    }

    /// The member's value; setting a new name appends it at the end, setting `nil` removes the member. Names
    /// match code point by code point (RFC 8259 section 8.3): "e\u{301}" is not the name "\u{E9}".
    public subscript(key: String) -> JSONValue? {
        get { members.first { $0.key.hasSameCodePoints(as: key) }?.value }
        set {
            let index = members.firstIndex { $0.key.hasSameCodePoints(as: key) }
            switch (index, newValue) {
            case (let index?, let value?): members[index].value = value
            case (let index?, nil): members.remove(at: index)
            case (nil, let value?): members.append(Member(key: key, value: value))
            case (nil, nil): break
            }
        }
    }

    /// Member names in order.
    public var keys: [String] { members.map(\.key) }

    /// The number of members.
    public var count: Int { members.count }

    /// Iterates `(key, value)` pairs in order.
    public func makeIterator() -> some IteratorProtocol<Element> {
        members.lazy.map { (key: $0.key, value: $0.value) }.makeIterator()
    }

    /// Order-insensitive equality.
    public static func == (lhs: JSONObject, rhs: JSONObject) -> Bool {
        lhs.count == rhs.count && lhs.members.allSatisfy { rhs[$0.key] == $0.value }
    }

    /// Order-insensitive hash: members are hashed one by one and combined commutatively.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(count)
        hasher.combine(members.reduce(0) { $0 &+ $1.hashValue })
    }

    // Parser use: the caller has already refused a duplicate name.
    mutating func append(uniqueKey key: String, value: JSONValue) {
        members.append(Member(key: key, value: value))
    }
}
