import Testing

@testable import TokenGateCore

@Suite struct CacheLRUTableTests {
    @Test func randomOperationsMatchASimpleModel() {
        var table = LRUTable<Int, Int>(capacity: 8)
        var model: [(key: Int, value: Int)] = []  // most recently used first
        var generator = SplitMix64(seed: 42)
        for step in 0..<5_000 {
            let key = Int(generator.next() % 12)
            switch generator.next() % 4 {
            case 0:  // read, as a cache hit does
                if let slot = table.slot(for: key) {
                    table.touch(slot)
                    let index = model.firstIndex { $0.key == key }!
                    #expect(table[slot] == model[index].value)
                    model.insert(model.remove(at: index), at: 0)
                } else {
                    #expect(!model.contains { $0.key == key })
                }
            case 1:
                table.removeValue(for: key)
                model.removeAll { $0.key == key }
            default:  // upsert
                if let slot = table.slot(for: key) {
                    table[slot] = step
                    model[model.firstIndex { $0.key == key }!].value = step
                } else {
                    let evicted = table.insert(key, step)
                    #expect(evicted == (model.count == 8 ? model.last?.key : nil))
                    if model.count == 8 { model.removeLast() }
                    model.insert((key, step), at: 0)
                }
            }
            #expect(table.keysByRecency == model.map(\.key))
            #expect(table.count == model.count)
        }
    }
}

/// A small deterministic generator, so a failure replays.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite struct CacheLRUTableIndexTests {
    /// A key whose hash the test chooses: many keys share a probe run, so lookups, evictions and removals must
    /// walk and repair runs that wrap around the end of the index.
    struct CollidingKey: Hashable {
        var id: Int
        func hash(into hasher: inout Hasher) { hasher.combine(id % 3) }
    }

    @Test(arguments: [false, true])
    func aLargerTableMatchesTheModelThroughGrowthEvictionAndRemoval(reserving: Bool) {
        var table = LRUTable<Int, Int>(capacity: 300, reservingCapacity: reserving)
        var model: [Int: Int] = [:]
        var order: [Int] = []  // most recently used first
        var generator = SplitMix64(seed: 7)
        for step in 0..<20_000 {
            let key = Int(generator.next() % 400)
            if generator.next() % 5 == 0 {
                table.removeValue(for: key)
                model[key] = nil
                order.removeAll { $0 == key }
            } else if let slot = table.slot(for: key) {
                #expect(table[slot] == model[key])
                table.touch(slot)
                order.removeAll { $0 == key }
                order.insert(key, at: 0)
            } else {
                let evicted = table.insert(key, step)
                #expect(evicted == (order.count == 300 ? order.last : nil))
                if let evicted {
                    model[evicted] = nil
                    order.removeLast()
                }
                model[key] = step
                order.insert(key, at: 0)
            }
        }
        #expect(table.keysByRecency == order)
        for key in 0..<400 { #expect(table.slot(for: key).map { table[$0] } == model[key]) }
    }

    @Test func keysThatCollideStayReachableAfterAnyRemoval() {
        var table = LRUTable<CollidingKey, Int>(capacity: 64)
        for id in 0..<60 { table.insert(CollidingKey(id: id), id) }
        var generator = SplitMix64(seed: 3)
        var present = Set(0..<60)
        while let id = present.randomElement(using: &generator) {
            table.removeValue(for: CollidingKey(id: id))
            present.remove(id)
            for other in 0..<60 {
                #expect((table.slot(for: CollidingKey(id: other)) != nil) == present.contains(other))
                if let slot = table.slot(for: CollidingKey(id: other)) { #expect(table[slot] == other) }
            }
        }
        #expect(table.count == 0)
    }

    @Test func removeAllLeavesAnEmptyTableThatFillsAgain() {
        var table = LRUTable<Int, Int>(capacity: 10, reservingCapacity: true)
        for key in 0..<25 { table.insert(key, key) }
        table.removeAll()
        #expect(table.count == 0 && table.slot(for: 24) == nil && table.keysByRecency.isEmpty)
        for key in 0..<12 { table.insert(key, -key) }
        #expect(table.keysByRecency == Array((2..<12).reversed()))
        #expect(table.slot(for: 5).map { table[$0] } == -5)
    }
}
