/// A bounded map that remembers use order: a dictionary from key to slot plus a doubly linked list threaded
/// through an array of nodes by index. Every operation is O(1) and none allocates once the arrays have grown,
/// so a cache hit costs a hash lookup and four index writes.
///
/// Not thread-safe: owners keep it inside a `Mutex`. Slots are stable until the next `insert` or `remove`.
struct LRUTable<Key: Hashable, Value> {
    fileprivate struct Node {
        var key: Key
        var value: Value
        var newer: Int  // toward `newest`; -1 at the newest end
        var older: Int  // toward `oldest`; -1 at the oldest end
    }

    /// The most entries the table holds; `insert` evicts the least recently used entry beyond it.
    let capacity: Int
    private var nodes: [Node] = []
    private var slots: [Key: Int] = [:]
    private var newest = -1
    private var oldest = -1

    init(capacity: Int) {
        precondition(capacity > 0, "LRUTable needs a capacity of at least 1")
        self.capacity = capacity
    }

    var count: Int { nodes.count }

    /// The slot holding `key`, without changing the use order.
    func slot(for key: Key) -> Int? { slots[key] }

    /// The least recently used slot.
    var oldestSlot: Int? { oldest < 0 ? nil : oldest }

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
        precondition(slots[key] == nil, "LRUTable.insert for a key already present")
        guard nodes.count >= capacity else {
            nodes.append(Node(key: key, value: value, newer: -1, older: -1))
            slots[key] = nodes.count - 1
            linkAsNewest(nodes.count - 1)
            return nil
        }
        // Full: reuse the oldest node in place rather than removing and appending.
        let slot = oldest
        let evicted = nodes[slot].key
        slots.removeValue(forKey: evicted)
        nodes[slot].key = key
        nodes[slot].value = value
        slots[key] = slot
        touch(slot)
        return evicted
    }

    /// Removes the entry at `slot`. Moves the last node into the hole, so other slots may change.
    mutating func remove(slot: Int) {
        unlink(slot)
        slots.removeValue(forKey: nodes[slot].key)
        let last = nodes.count - 1
        if slot != last {
            nodes.swapAt(slot, last)
            let newer = nodes[slot].newer
            let older = nodes[slot].older
            if newer >= 0 { nodes[newer].older = slot } else { newest = slot }
            if older >= 0 { nodes[older].newer = slot } else { oldest = slot }
            slots[nodes[slot].key] = slot
        }
        nodes.removeLast()
    }

    /// Removes `key` if present.
    mutating func removeValue(for key: Key) {
        if let slot = slots[key] { remove(slot: slot) }
    }

    mutating func removeAll() {
        nodes.removeAll()
        slots.removeAll()
        newest = -1
        oldest = -1
    }

    /// Keys from the most to the least recently used; for tests and invariants, O(n).
    var keysByRecency: [Key] {
        var keys: [Key] = []
        var slot = newest
        while slot >= 0 {
            keys.append(nodes[slot].key)
            slot = nodes[slot].older
        }
        return keys
    }

    private mutating func unlink(_ slot: Int) {
        // Read the links only: copying the node would retain its key and value.
        let newer = nodes[slot].newer
        let older = nodes[slot].older
        if newer >= 0 { nodes[newer].older = older } else { newest = older }
        if older >= 0 { nodes[older].newer = newer } else { oldest = newer }
        nodes[slot].newer = -1
        nodes[slot].older = -1
    }

    private mutating func linkAsNewest(_ slot: Int) {
        nodes[slot].older = newest
        nodes[slot].newer = -1
        if newest >= 0 { nodes[newest].newer = slot } else { oldest = slot }
        newest = slot
    }
}

extension LRUTable: Sendable where Key: Sendable, Value: Sendable {}
extension LRUTable.Node: Sendable where Key: Sendable, Value: Sendable {}
