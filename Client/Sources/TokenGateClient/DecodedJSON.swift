internal import Foundation

/// One JSON value of a flat object, decoded strictly: `true` is never a number and `"3600"` never a bool.
enum DecodedJSON: Decodable, Sendable {
    case null
    case bool(Bool)
    case number(Double)
    case string(String)
    case nested

    init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let bool = try? container.decode(Bool.self) {
            self = .bool(bool)
        } else if let number = try? container.decode(Double.self) {
            self = .number(number)
        } else if let string = try? container.decode(String.self) {
            self = .string(string)
        } else {
            self = .nested  // an array or object: never a token or an expiry
        }
    }

    /// A number, or a string holding one (some legacy servers quote their timestamps).
    var number: Double? {
        switch self {
        case .number(let value): value.isFinite ? value : nil
        case .string(let text): Double(text.trimmingCharacters(in: .whitespaces)).flatMap { $0.isFinite ? $0 : nil }
        default: nil
        }
    }

    var string: String? {
        if case .string(let value) = self { value } else { nil }
    }

    /// Decodes a JSON object's top level, or `nil` if `data` is not one.
    static func object(_ data: Data) -> [String: DecodedJSON]? {
        try? JSONDecoder().decode([String: DecodedJSON].self, from: data)
    }
}
