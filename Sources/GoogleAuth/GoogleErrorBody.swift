import JOSE

/// Google's error answers, reduced to one safe line: OAuth's `{"error","error_description"}` or the API error
/// `{"error":{"code","message","status"}}`.
enum GoogleErrorBody {
    /// Error text is cut to this many characters: enough for Google's longest messages, not a flood.
    static let maximumCharacters = 300

    /// `error: error_description`, or `STATUS: message`, or `nil` when the body is neither. Every string of
    /// `secrets` found in it is replaced, control characters are dropped and the text is cut.
    static func summary(_ body: [UInt8], scrubbing secrets: [String]) -> String? {
        guard let value = try? JSON.parse(body), case .object(let object) = value else { return nil }
        var text: String
        switch object["error"] {
        case .string(let code)?:
            text = code
            if let description = object["error_description"]?.stringValue, !description.isEmpty { text += ": \(description)" }
        case .object(let error)?:
            guard let message = error["message"]?.stringValue else { return nil }
            text = error["status"]?.stringValue.map { "\($0): \(message)" } ?? message
        default:
            return nil
        }
        return clean(text, scrubbing: secrets)
    }

    static func clean(_ text: String, scrubbing secrets: [String]) -> String {
        var text = text
        for secret in secrets where secret.utf8.count >= 8 { text = text.replacing(secret, with: "[redacted]") }
        let printable = String(String.UnicodeScalarView(text.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }))
        return printable.count > maximumCharacters ? String(printable.prefix(maximumCharacters)) + "…" : printable
    }
}
