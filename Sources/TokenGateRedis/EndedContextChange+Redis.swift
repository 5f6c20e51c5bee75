import TokenGateCore

/// How the Redis store writes an ended or lifted context: the value of an ended entity's key, and the message
/// published on the channel every replica subscribes to. Only this module reads and writes them. Words are separated
/// by spaces; an ID is percent-encoded (Fleet Engine's IDs may hold spaces and any letter).
extension EndedContextChange {
    /// `provider kind id`.
    var subject: String { "\(key.provider) \(key.kind.rawValue) \(Self.encode(key.id.rawValue))" }

    /// The message of a lift: `lift provider kind id origin`. An end's is written by the script that records it:
    /// `end provider kind id until origin`, with the end in force.
    var liftMessage: String { "lift \(subject) \(Self.word(origin))" }

    /// A change read back from its message; nil for anything malformed (the store is not trusted). A message of an
    /// earlier version (`end provider kind id until`, no origin) is an operator's.
    init?(message: String) {
        let words = message.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        guard let subject = words.count >= 4 ? Self.key(Array(words[1...3])) : nil else { return nil }
        switch (words[0], words.count) {
        case ("end", 5), ("end", 6):
            guard let until = Int64(words[4]), let origin = words.count == 6 ? Self.origin(words[5]) : .operator else { return nil }
            self.init(key: subject, until: until, origin: origin)
        case ("lift", 4), ("lift", 5):
            guard let origin = words.count == 5 ? Self.origin(words[4]) : .operator else { return nil }
            self.init(key: subject, until: nil, origin: origin)
        default:
            return nil
        }
    }

    private static func key(_ words: [String]) -> EndedContexts.Key? {
        guard let provider = ProviderID(words[0]), let type = TokenType(rawValue: words[1]), let text = decode(words[2]),
            let id = ContextID(text), let key = EndedContexts.Key(provider: provider, tokenType: type, id: id), key.kind == type
        else { return nil }
        return key
    }

    /// `op` or `ev:MILLISECONDS`.
    static func word(_ origin: EndedContexts.Origin) -> String {
        switch origin {
        case .operator: "op"
        case .event(let at): "ev:\(at)"
        }
    }

    /// The origin a word names, or nil.
    static func origin(_ word: String) -> EndedContexts.Origin? {
        if word == "op" { return .operator }
        guard word.hasPrefix("ev:"), let at = Int64(word.dropFirst(3)) else { return nil }
        return .event(at: at)
    }

    /// An end as stored, `until origin`, or nil.
    static func record(_ text: String) -> EndedContexts.Record? {
        let words = text.split(separator: " ")
        guard words.count == 2, let until = Int64(words[0]), let origin = origin(String(words[1])) else { return nil }
        return EndedContexts.Record(until: until, origin: origin)
    }

    /// `text` with `%`, space, controls and every byte outside printable ASCII percent-encoded.
    static func encode(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            if byte > 0x20, byte < 0x7F, byte != UInt8(ascii: "%") {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out += "%" + String(byte >> 4, radix: 16, uppercase: true) + String(byte & 0xF, radix: 16, uppercase: true)
            }
        }
        return out
    }

    /// The text ``encode(_:)`` made, or nil when it is not valid.
    static func decode(_ text: String) -> String? {
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
            bytes.append(high << 4 | low)
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        default: nil
        }
    }
}
