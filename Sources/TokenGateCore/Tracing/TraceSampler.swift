import Synchronization
package import Tracing

/// Whether a request (or a piece of work outside any request) is traced, decided once, first, where it enters the
/// gateway: a caller's W3C `traceparent` decides by its `sampled` flag (Trace Context §3.2.2.5); without a valid one
/// a new trace is sampled with probability ``ratio``.
///
/// An unsampled request then costs nothing: no span, no random ID, no task-local on a cached hit. The roll is not a
/// trace ID: a counter mixed by SplitMix64's finaliser, so it takes no entropy from the kernel, and any thread may
/// roll at once (one relaxed atomic add).
package final class TraceSampler: Sendable {
    /// The share of new traces recorded, in 0...1.
    package let ratio: Double
    /// A roll below this is sampled; nil: every one is.
    private let threshold: UInt64?
    private let counter: Atomic<UInt64>

    /// Samples `ratio` of new traces; a caller's sampled flag is followed whatever the ratio.
    package init(ratio: Double) {
        self.ratio = min(max(ratio, 0), 1)
        threshold = self.ratio >= 1 ? nil : UInt64(self.ratio * 0x1p64.nextDown)
        counter = Atomic(UInt64.random(in: .min ... .max))
    }

    /// Samples every trace: a tracer without a ratio of its own (the tests').
    package static let always = TraceSampler(ratio: 1)

    /// The decision for a request that sent `traceparent` (nil: none, or several).
    package func isSampled(traceparent: String?) -> Bool {
        if let traceparent, let sampled = Self.sampledFlag(of: traceparent) { return sampled }
        return roll()
    }

    /// A new trace's decision.
    package func roll() -> Bool {
        guard let threshold else { return true }
        var mixed = counter.wrappingAdd(0x9E37_79B9_7F4A_7C15, ordering: .relaxed).newValue
        mixed = (mixed ^ (mixed >> 30)) &* 0xBF58_476D_1CE4_E5B9
        mixed = (mixed ^ (mixed >> 27)) &* 0x94D0_49BB_1331_11EB
        return mixed ^ (mixed >> 31) < threshold
    }

    /// The `sampled` flag of a valid `traceparent`, else nil (a new trace then). Version `00` is exactly
    /// `00-{32 hex trace ID}-{16 hex parent ID}-{2 hex flags}`; a later version may append `-…` (§4.3); lower-case
    /// hex only, and neither ID all zeros (§3.2.2.3, §3.2.2.4).
    static func sampledFlag(of traceparent: String) -> Bool? {
        var text = traceparent
        return text.withUTF8 { bytes -> Bool? in
            let (zero, dash, f) = (UInt8(ascii: "0"), UInt8(ascii: "-"), UInt8(ascii: "f"))
            guard bytes.count >= 55, bytes[2] == dash, bytes[35] == dash, bytes[52] == dash else { return nil }
            let version = (bytes[0], bytes[1])
            guard version != (f, f), bytes.count == 55 || (version != (zero, zero) && bytes[55] == dash) else { return nil }
            // The table is read once here (a lazy global's once-check per byte would cost more than the scan); each
            // byte's entry is its hex value plus one, 0 for anything else, so the smallest entry says whether all
            // were digits and OR-ing the values whether an ID is all zeros. No branch per byte.
            return hexValuePlusOne.withUnsafeBufferPointer { table -> Bool? in
                var smallest = UInt8.max
                /// The fields' bytes in `range`: their values OR-ed.
                func scan(_ range: Range<Int>) -> UInt8 {
                    var values: UInt8 = 0
                    for index in range {
                        let entry = table[Int(bytes[index])]
                        smallest = min(smallest, entry)
                        values |= entry &- 1
                    }
                    return values
                }
                // The sampled flag is the low bit of the flags' second digit.
                let (_, trace, parent, _, flags) = (scan(0..<2), scan(3..<35), scan(36..<52), scan(53..<54), scan(54..<55))
                guard smallest > 0, trace != 0, parent != 0 else { return nil }
                return flags & 1 == 1
            }
        }
    }

    /// Lower-case hex digits' values plus one; 0 for every other byte.
    private static let hexValuePlusOne: [UInt8] = (0...255).map { (byte: Int) -> UInt8 in
        switch UInt8(byte) {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): UInt8(byte) - UInt8(ascii: "0") + 1
        case UInt8(ascii: "a")...UInt8(ascii: "f"): UInt8(byte) - UInt8(ascii: "a") + 11
        default: 0
        }
    }
}

/// Where a decision travels with the work it was made for: a context marked unsampled starts no span
/// (``RedactingTracer``, ``RequestSpans``), one marked sampled is recorded, and an unmarked one is new work to decide.
package enum TraceDecisionKey: ServiceContextKey {
    package typealias Value = Bool
}

extension ServiceContext {
    /// The sampling decision made for this work, or nil where none was made yet.
    package var traceSampled: Bool? {
        get { self[TraceDecisionKey.self] }
        set { self[TraceDecisionKey.self] = newValue }
    }
}
