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

    private var table: LRUTable<[UInt8], Entry>?

    init(limit: Int) {
        table = limit > 0 ? LRUTable(capacity: limit) : nil
    }

    var count: Int { table?.count ?? 0 }

    /// The remembered caller, or nil; an expired entry is dropped on the way.
    mutating func caller(for digest: [UInt8], now: Int64) -> AuthenticatedCaller? {
        guard let slot = table?.slot(for: digest), let entry = table?[slot] else { return nil }
        guard now < entry.validUntil else {
            table?.remove(slot: slot)
            return nil
        }
        table?.touch(slot)
        return entry.caller
    }

    mutating func remember(_ caller: AuthenticatedCaller, for digest: [UInt8], validUntil: Int64) {
        let entry = Entry(caller: caller, validUntil: validUntil)
        if let slot = table?.slot(for: digest) {
            table?[slot] = entry
            table?.touch(slot)
        } else {
            table?.insert(digest, entry)
        }
    }
}
