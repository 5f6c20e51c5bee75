import TokenGateCore

/// How the Redis store writes an ended or lifted context: the field of its entry in the ended-contexts hash, and the
/// message published on the channel every replica subscribes to. Only this module reads and writes them.
extension EndedContextChange {
    /// The name of its entry in the store's list: `provider kind id`.
    var field: String { "\(key.provider) \(key.kind.rawValue) \(key.id)" }

    /// The message form: `end provider kind id until` or `lift provider kind id`.
    var message: String { until.map { "end \(field) \($0)" } ?? "lift \(field)" }

    /// A change read back from its message; nil for anything malformed (the store is not trusted).
    init?(message: String) {
        let words = message.split(separator: " ", omittingEmptySubsequences: false).map(String.init)
        switch words.first {
        case "end" where words.count == 5:
            guard let until = Int64(words[4]) else { return nil }
            self.init(field: Array(words[1...3]), until: until)
        case "lift" where words.count == 4:
            self.init(field: Array(words[1...3]), until: nil)
        default:
            return nil
        }
    }

    /// A change from a list entry: its field and the time stored under it.
    init?(field: String, until: Int64) {
        self.init(field: field.split(separator: " ", omittingEmptySubsequences: false).map(String.init), until: until)
    }

    fileprivate init?(field words: [String], until: Int64?) {
        guard words.count == 3, let provider = ProviderID(words[0]), let type = TokenType(rawValue: words[1]), let id = ContextID(words[2]),
            let key = EndedContexts.Key(provider: provider, tokenType: type, id: id), key.kind == type
        else { return nil }
        self.init(key: key, until: until)
    }
}
