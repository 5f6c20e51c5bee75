import JOSE

/// A trip, vehicle, task or tracking ID that a token is scoped to: exactly the IDs Fleet Engine takes.
///
/// Fleet Engine's rule for every ID (its SDK references' `FleetEngineIDString`, and each `trip_id`, `vehicle_id`,
/// `task_id`, `tracking_id`, `delivery_vehicle_id` of its API): a valid UTF-8 string in Unicode Normalization Form
/// C, at most 64 characters, none of `/ : ? , #`. Spaces, `+`, `%`, `&`, `=`, letters of any script and emoji are
/// legal. TokenGate adds one rule: `*` alone is never an ID, so a client token can never become a wildcard token.
///
/// - Characters are Unicode code points, as Google's APIs count them (AIP-210: "characters" means code points):
///   an emoji outside the BMP is one (two UTF-16 units), a letter and a combining mark with no precomposed form
///   are two (one grapheme cluster).
/// - The form is checked, never changed: a decomposed `é` is another string at Fleet Engine, which refuses it, so
///   the gateway refuses it too rather than mint for an ID the caller did not send.
/// - Control characters are within the rule and accepted, as Fleet Engine accepts them: ``description`` escapes
///   them for logs, and JSON output escapes them.
///
/// Two IDs are equal when their UTF-8 is: every ID is NFC, where byte equality and canonical equivalence agree.
public struct ContextID: Sendable, Hashable, Comparable, CustomStringConvertible {
    /// The longest ID accepted, in Unicode code points.
    public static let maxLength = 64

    /// The ID as the app sent it.
    public let rawValue: String
    /// Whether ``rawValue`` is JSON string text as it is (no `"`, `\` or control character below U+0020): nearly
    /// every ID, which a token body then copies without escaping.
    package let isJSONSafe: Bool

    /// Returns `nil` unless `rawValue` is a well-formed context ID.
    public init?(_ rawValue: String) {
        guard let id = try? ContextID(validating: rawValue) else { return nil }
        self = id
    }

    /// The ID `rawValue`, or the first rule it breaks, in the order of ``Violation``'s cases.
    public init(validating rawValue: String) throws(Violation) {
        isJSONSafe = try Self.check(rawValue)
        self.rawValue = rawValue
    }

    /// The ID whose UTF-8 is `bytes` (percent-decoded from a URL, say), or the first rule it breaks: bytes that are
    /// not UTF-8 are refused, never repaired into another ID.
    public init(validatingUTF8 bytes: some Collection<UInt8>) throws(Violation) {
        guard !bytes.isEmpty else { throw .empty }
        guard let text = String(validating: bytes, as: UTF8.self) else { throw .invalidUTF8 }
        try self.init(validating: text)
    }

    /// A rule of Fleet Engine's (or TokenGate's `*`) that a text breaks; the cases are checked in this order. Its
    /// ``description`` is the fixed predicate a message puts after the ID's name ("is not valid UTF-8").
    public enum Violation: String, Error, Sendable, CaseIterable, CustomStringConvertible {
        /// No character at all.
        case empty
        /// Bytes that are not UTF-8 (only bytes can be: a `String` always is).
        case invalidUTF8 = "invalid_utf8"
        /// More than ``ContextID/maxLength`` code points.
        case tooLong = "too_long"
        /// One of `/ : ? , #`.
        case reservedCharacter = "reserved_character"
        /// Not in Unicode Normalization Form C.
        case notNFC = "not_nfc"
        /// `*` alone: a token's claim reads it as every ID.
        case wildcard

        public var description: String {
            switch self {
            case .empty: "is empty"
            case .invalidUTF8: "is not valid UTF-8"
            case .tooLong: "is longer than \(ContextID.maxLength) characters (Unicode code points)"
            case .reservedCharacter: "contains '/', ':', '?', ',' or '#'"
            case .notNFC: "is not in Unicode Normalization Form C"
            case .wildcard: "is '*', which is never an ID"
            }
        }
    }

    /// Checks `text` against the rule; returns whether it is JSON-safe.
    private static func check(_ text: String) throws(Violation) -> Bool {
        // One pass over the bytes, a table lookup each: the usual ID is ASCII and needs nothing more.
        var classes: UInt8 = 0
        let count = text.utf8.count
        let scanned: Void? = text.utf8.withContiguousStorageIfAvailable { bytes in
            for byte in bytes { classes |= byteClasses[Int(byte)] }
        }
        if scanned == nil {
            for byte in text.utf8 { classes |= byteClasses[Int(byte)] }
        }
        guard count > 0 else { throw .empty }
        if classes & nonASCII == 0 {
            guard count <= maxLength else { throw .tooLong }
        } else {
            // Four bytes make a code point at most: longer than that is too long uncounted.
            guard count <= 4 * maxLength, text.unicodeScalars.count <= maxLength else { throw .tooLong }
        }
        guard classes & reserved == 0 else { throw .reservedCharacter }
        // ASCII is NFC; anything else is compared with its NFC form.
        guard classes & nonASCII == 0 || isNFC(text) else { throw .notNFC }
        guard text != "*" else { throw .wildcard }
        return classes & needsJSONEscape == 0
    }

    /// Whether `text` is its own NFC form, byte for byte. The standard library's check: a quick check first, then
    /// the input against its normalization when that one cannot tell.
    private static func isNFC(_ text: String) -> Bool {
        if #available(macOS 26, iOS 26, *) {
            var span = text.utf8Span
            return span.checkForNFC(quickCheck: true) || span.checkForNFC(quickCheck: false)
        }
        // Older Apple systems: what `checkForNFC(quickCheck: false)` does.
        return text.utf8.elementsEqual(text._nfcCodeUnits)
    }

    private static let nonASCII: UInt8 = 1
    private static let reserved: UInt8 = 2
    private static let needsJSONEscape: UInt8 = 4

    /// Per byte, the classes it belongs to.
    private static let byteClasses: [UInt8] = (0...255).map { byte -> UInt8 in
        switch byte {
        case 0x80...: nonASCII
        case 0x00..<0x20, 0x22, 0x5C: needsJSONEscape
        case 0x2F, 0x3A, 0x3F, 0x2C, 0x23: reserved  // / : ? , #
        default: 0
        }
    }

    /// The ID for log lines and messages: printable ASCII and letters as they are; `\`, `"`, controls, format
    /// characters (bidirectional overrides, zero-width joiners), separators other than the space, and unassigned or
    /// private code points as `\u{…}`. The escaping can be undone (two IDs never log the same text), and no ID can
    /// break a log line or hide characters in it.
    public var description: String {
        guard isJSONSafe, rawValue.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return Self.escaped(rawValue) }
        return rawValue
    }

    /// `text` escaped as ``description`` escapes an ID, for other text that may hold IDs (a file's key path).
    package static func escaped(_ text: String) -> String {
        var output = ""
        for scalar in text.unicodeScalars {
            if Sanitized.isShownAsIs(scalar) {
                output.unicodeScalars.append(scalar)
            } else {
                output += "\\u{" + String(scalar.value, radix: 16, uppercase: true) + "}"
            }
        }
        return output
    }

    public static func == (lhs: ContextID, rhs: ContextID) -> Bool { lhs.rawValue.utf8.elementsEqual(rhs.rawValue.utf8) }

    public func hash(into hasher: inout Hasher) {
        let hashed: Void? = rawValue.utf8.withContiguousStorageIfAvailable { hasher.combine(bytes: UnsafeRawBufferPointer($0)) }
        if hashed == nil { for byte in rawValue.utf8 { hasher.combine(byte) } }
        hasher.combine(rawValue.utf8.count)
    }

    public static func < (lhs: ContextID, rhs: ContextID) -> Bool { lhs.rawValue.utf8.lexicographicallyPrecedes(rhs.rawValue.utf8) }
}

extension ContextID {
    /// Where a refused ID was given: a request parameter, or the admin API's `contextId`. A closed set, so a
    /// refusal's sentence is always one of a fixed few and never quotes the request.
    public enum Field: String, Sendable, CaseIterable {
        case tripId, vehicleId, deliveryVehicleId, trackingId, taskId, taskIds, contextId
    }

    /// An ID refused: which field held it and which rule it broke. Its ``description`` is the fixed sentence a
    /// caller is told (`400 invalid_request`): the field and the rule, never the ID.
    public struct Refusal: Error, Sendable, Hashable, CustomStringConvertible {
        /// The field that held the ID.
        public let field: Field
        /// The rule it broke.
        public let violation: Violation

        /// A refusal of `field`'s ID for `violation`.
        public init(_ field: Field, _ violation: Violation) {
            self.field = field
            self.violation = violation
        }

        /// Every refusal there can be.
        public static var allCases: [Refusal] { Field.allCases.flatMap { field in Violation.allCases.map { Refusal(field, $0) } } }

        public var description: String { "\(field == .taskIds ? "an ID in taskIds" : field.rawValue) \(violation)" }
    }
}
