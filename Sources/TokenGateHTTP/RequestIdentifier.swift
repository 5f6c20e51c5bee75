import Synchronization

/// Request IDs: the caller's `X-Request-ID` when it is well-formed, else one made here.
///
/// A made ID is 15 characters, so Swift stores it inline in the `String` (a small string): making one costs an
/// atomic increment and no allocation. The first 6 characters are random per process, the last 9 a counter, both
/// in base 32 (`0-9a-v`): unique within a process for 2^45 requests, and unlikely to repeat across processes.
enum RequestIdentifier {
    /// The longest incoming ID honoured.
    static let maxLength = 64

    /// Whether `value` is 1 to 64 characters of `[A-Za-z0-9._-]`: safe to log and to echo in a header as is.
    static func isWellFormed(_ value: String) -> Bool {
        var count = 0
        for byte in value.utf8 {
            count += 1
            guard count <= maxLength, isAllowed(byte) else { return false }
        }
        return count > 0
    }

    /// `incoming` when it is well-formed, else a new ID.
    static func chosen(incoming: String?) -> String {
        if let incoming, isWellFormed(incoming) { incoming } else { make() }
    }

    /// A new ID.
    static func make() -> String {
        let number = counter.wrappingAdd(1, ordering: .relaxed).newValue
        return String(unsafeUninitializedCapacity: 15) { buffer in
            var prefix = self.prefix
            for index in 0..<6 {
                buffer[index] = alphabet(UInt64(prefix & 31))
                prefix >>= 5
            }
            var rest = number
            for index in (6..<15).reversed() {
                buffer[index] = alphabet(rest & 31)
                rest >>= 5
            }
            return 15
        }
    }

    private static let prefix = UInt32.random(in: .min ... .max)
    private static let counter = Atomic<UInt64>(0)

    private static func alphabet(_ value: UInt64) -> UInt8 {
        value < 10 ? UInt8(ascii: "0") + UInt8(value) : UInt8(ascii: "a") + UInt8(value - 10)
    }

    private static func isAllowed(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
            true
        default:
            false
        }
    }
}
