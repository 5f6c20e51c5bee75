/// A bounded map that remembers use order: nodes in one array, threaded into a doubly linked list by index, and
/// an open-addressing index from key to node. Every operation is O(1) (expected) and none allocates once the
/// arrays have grown, so a cache hit costs one probe and four index writes.
///
/// Compact on purpose: a token cache holds 100,000 of these. Each key is stored once (in its node; the index holds
/// only 32-bit node numbers), and the links are 32-bit. With `reservingCapacity`, the node array is allocated for
/// `capacity` (up to ``maxReservation`` nodes) up front: untouched pages cost no memory, and the array does not
/// double and copy, nor leave half of itself unused after doubling.
///
/// Not thread-safe: owners keep it inside a `Mutex`. Slots are stable until the next `insert` or `remove`.
struct LRUTable<Key: Hashable, Value> {
    fileprivate struct Node {
        var key: Key
        var value: Value
        var newer: Int32  // toward `newest`; -1 at the newest end
        var older: Int32  // toward `oldest`; -1 at the oldest end
    }

    /// The most entries the table holds; `insert` evicts the least recently used entry beyond it.
    let capacity: Int
    private let reservesCapacity: Bool
    private var nodes: [Node] = []
    /// Linear probing over a power-of-two count of buckets, at most 3/4 full: each holds a node's slot + 1, or 0
    /// when empty. Deletion shifts the rest of a probe run back, so there are no tombstones.
    private var buckets: [UInt32] = []
    private var newest: Int32 = -1
    private var oldest: Int32 = -1

    /// The most nodes `reservingCapacity` allocates up front: address space, not memory, but an allocation far
    /// beyond the machine's memory can still be refused.
    static var maxReservation: Int { 1 << 20 }

    init(capacity: Int, reservingCapacity: Bool = false) {
        precondition(capacity > 0, "LRUTable needs a capacity of at least 1")
        precondition(capacity < Int(Int32.max), "LRUTable holds fewer than 2^31 entries")
        self.capacity = capacity
        self.reservesCapacity = reservingCapacity
        if reservingCapacity { nodes.reserveCapacity(min(capacity, Self.maxReservation)) }
    }

    var count: Int { nodes.count }

    /// The slot holding `key`, without changing the use order.
    func slot(for key: Key) -> Int? {
        guard let bucket = bucket(of: key) else { return nil }
        return Int(buckets[bucket]) - 1
    }

    /// The least recently used slot.
    var oldestSlot: Int? { oldest < 0 ? nil : Int(oldest) }

    subscript(slot: Int) -> Value {
        get { nodes[slot].value }
        set { nodes[slot].value = newValue }
    }

    /// Marks `slot` as the most recently used.
    mutating func touch(_ slot: Int) {
        guard slot != newest else { return }
        unlink(slot)
        linkAsNewest(slot)
    }

    /// Adds `key`, which must be absent, as the most recently used entry, evicting the least recently used one
    /// when the table is full. Returns the evicted key.
    @discardableResult
    mutating func insert(_ key: Key, _ value: Value) -> Key? {
        precondition(bucket(of: key) == nil, "LRUTable.insert for a key already present")
        guard nodes.count >= capacity else {
            growIndexIfNeeded(toHold: nodes.count + 1)
            nodes.append(Node(key: key, value: value, newer: -1, older: -1))
            let slot = nodes.count - 1
            buckets[emptyBucket(for: key)] = UInt32(slot + 1)
            linkAsNewest(slot)
            return nil
        }
        // Full: reuse the oldest node in place rather than removing and appending.
        let slot = Int(oldest)
        let evicted = nodes[slot].key
        removeFromIndex(bucket(of: evicted)!)
        nodes[slot].key = key
        nodes[slot].value = value
        buckets[emptyBucket(for: key)] = UInt32(slot + 1)
        touch(slot)
        return evicted
    }

    /// Removes the entry at `slot`. Moves the last node into the hole, so other slots may change.
    mutating func remove(slot: Int) {
        unlink(slot)
        removeFromIndex(bucket(of: nodes[slot].key)!)
        let last = nodes.count - 1
        if slot != last {
            // The last node's bucket must point at its new slot.
            buckets[bucket(of: nodes[last].key)!] = UInt32(slot + 1)
            nodes.swapAt(slot, last)
            let newer = nodes[slot].newer
            let older = nodes[slot].older
            if newer >= 0 { nodes[Int(newer)].older = Int32(slot) } else { newest = Int32(slot) }
            if older >= 0 { nodes[Int(older)].newer = Int32(slot) } else { oldest = Int32(slot) }
        }
        nodes.removeLast()
    }

    /// Removes `key` if present.
    mutating func removeValue(for key: Key) {
        if let slot = slot(for: key) { remove(slot: slot) }
    }

    mutating func removeAll() {
        nodes.removeAll(keepingCapacity: reservesCapacity)
        buckets.removeAll()
        newest = -1
        oldest = -1
    }

    /// Keys from the most to the least recently used; for tests and invariants, O(n).
    var keysByRecency: [Key] {
        var keys: [Key] = []
        var slot = newest
        while slot >= 0 {
            keys.append(nodes[Int(slot)].key)
            slot = nodes[Int(slot)].older
        }
        return keys
    }

    // MARK: - Use order

    private mutating func unlink(_ slot: Int) {
        // Read the links only: copying the node would retain its key and value.
        let newer = nodes[slot].newer
        let older = nodes[slot].older
        if newer >= 0 { nodes[Int(newer)].older = older } else { newest = older }
        if older >= 0 { nodes[Int(older)].newer = newer } else { oldest = newer }
        nodes[slot].newer = -1
        nodes[slot].older = -1
    }

    private mutating func linkAsNewest(_ slot: Int) {
        nodes[slot].older = newest
        nodes[slot].newer = -1
        if newest >= 0 { nodes[Int(newest)].newer = Int32(slot) } else { oldest = Int32(slot) }
        newest = Int32(slot)
    }

    // MARK: - Index

    /// Where a probe for `key` starts. `hashValue` is seeded per process, so callers cannot aim keys at one run.
    private func home(of key: Key) -> Int { key.hashValue & (buckets.count - 1) }

    /// The bucket holding `key`, if it is present.
    private func bucket(of key: Key) -> Int? {
        guard !buckets.isEmpty else { return nil }
        let mask = buckets.count - 1
        var bucket = home(of: key)
        while true {
            let entry = buckets[bucket]
            if entry == 0 { return nil }
            if nodes[Int(entry) - 1].key == key { return bucket }
            bucket = (bucket + 1) & mask
        }
    }

    /// The first empty bucket of `key`'s probe run; `key` must be absent and the index not full.
    private func emptyBucket(for key: Key) -> Int {
        let mask = buckets.count - 1
        var bucket = home(of: key)
        while buckets[bucket] != 0 { bucket = (bucket + 1) & mask }
        return bucket
    }

    /// Empties `bucket` and moves back the entries after it in its run that may take its place (backward-shift
    /// deletion), so every key stays reachable from its home without tombstones.
    private mutating func removeFromIndex(_ bucket: Int) {
        let mask = buckets.count - 1
        var hole = bucket
        var next = bucket
        while true {
            next = (next + 1) & mask
            let entry = buckets[next]
            if entry == 0 { break }
            let home = home(of: nodes[Int(entry) - 1].key)
            // The entry may move into the hole unless its home lies cyclically in (hole, next].
            let homeIsAfterHole = hole <= next ? (home > hole && home <= next) : (home > hole || home <= next)
            if !homeIsAfterHole {
                buckets[hole] = entry
                hole = next
            }
        }
        buckets[hole] = 0
    }

    /// Doubles the index (rehashing every node) when `count` entries would fill more than 3/4 of it.
    private mutating func growIndexIfNeeded(toHold count: Int) {
        guard count * 4 > buckets.count * 3 else { return }
        var size = max(8, buckets.count)
        while count * 4 > size * 3 { size *= 2 }
        buckets = [UInt32](repeating: 0, count: size)
        for slot in nodes.indices { buckets[emptyBucket(for: nodes[slot].key)] = UInt32(slot + 1) }
    }
}

extension LRUTable: Sendable where Key: Sendable, Value: Sendable {}
extension LRUTable.Node: Sendable where Key: Sendable, Value: Sendable {}
