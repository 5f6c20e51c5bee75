/// Session tokens that verified, so a repeat call costs a SHA-256 and a table lookup instead of a signature check.
///
/// Keyed by the token's SHA-256 (32 bytes, whatever the token's length), valid while `now < validUntil`, the same
/// bound the verifier applied (`exp` plus leeway). Bounded, least recently used evicted first; every operation is
/// O(1). A limit of 0 or less disables it. Not thread-safe: ``CallerAuthenticator`` keeps it in a `Mutex`. Only
/// successes are ever stored.
struct SessionMemo: Sendable {
    struct Entry: Sendable {
        var caller: AuthenticatedCaller
        var validUntil: Int64
    }

    /// A token's SHA-256 as four words: held inline (no array per entry) and hashed and compared a word at a time
    /// rather than a byte at a time. Equal only when all 32 bytes are.
    struct Key: Hashable {
        let words: (UInt64, UInt64, UInt64, UInt64)

        init(_ digest: [UInt8]) {
            precondition(digest.count == 32, "a SHA-256 digest is 32 bytes")
            words = digest.withUnsafeBytes { bytes in
                (
                    bytes.loadUnaligned(fromByteOffset: 0, as: UInt64.self), bytes.loadUnaligned(fromByteOffset: 8, as: UInt64.self),
                    bytes.loadUnaligned(fromByteOffset: 16, as: UInt64.self), bytes.loadUnaligned(fromByteOffset: 24, as: UInt64.self)
                )
            }
        }

        static func == (lhs: Key, rhs: Key) -> Bool {
            lhs.words.0 == rhs.words.0 && lhs.words.1 == rhs.words.1 && lhs.words.2 == rhs.words.2 && lhs.words.3 == rhs.words.3
        }

        func hash(into hasher: inout Hasher) {
            hasher.combine(words.0)
            hasher.combine(words.1)
            hasher.combine(words.2)
            hasher.combine(words.3)
        }
    }

    private var table: LRUTable<Key, Entry>?

    init(limit: Int) {
        table = limit > 0 ? LRUTable(capacity: limit) : nil
    }

    var count: Int { table?.count ?? 0 }

    /// The remembered caller, or nil; an expired entry is dropped on the way.
    mutating func caller(for digest: [UInt8], now: Int64) -> AuthenticatedCaller? {
        guard let slot = table?.slot(for: Key(digest)), let entry = table?[slot] else { return nil }
        guard now < entry.validUntil else {
            table?.remove(slot: slot)
            return nil
        }
        table?.touch(slot)
        return entry.caller
    }

    mutating func remember(_ caller: AuthenticatedCaller, for digest: [UInt8], validUntil: Int64) {
        let (key, entry) = (Key(digest), Entry(caller: caller, validUntil: validUntil))
        if let slot = table?.slot(for: key) {
            table?[slot] = entry
            table?.touch(slot)
        } else {
            table?.insert(key, entry)
        }
    }
}
