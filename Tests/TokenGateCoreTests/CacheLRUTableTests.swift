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
