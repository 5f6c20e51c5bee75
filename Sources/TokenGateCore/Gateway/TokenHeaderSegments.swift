import Synchronization

/// The header segments of one provider's recent tokens, kept once, each with the payload segment of the first token
/// seen with it. Every token a key signs has the same header (`alg`, `kid`, `typ`), so the cached tokens of a
/// provider share a handful of segments rather than each holding about a hundred bytes of its own; and their
/// payloads start alike (`iss`, `sub`, `aud`), so each shares that start with the payload kept here. Bounded: past
/// its capacity the oldest segment is replaced, and tokens that hold it keep their copy.
package final class TokenHeaderSegments: Sendable {
    private static let capacity = 16
    private let segments = Mutex<(known: [(header: [UInt8], payload: [UInt8])], next: Int)>(([], 0))

    package init() {}

    /// The number of segments held.
    var count: Int { segments.withLock { $0.known.count } }

    /// The stored segment equal to `segment`, stored first if it is new.
    func shared(_ segment: [UInt8]) -> [UInt8] {
        segment.withUnsafeBufferPointer { shared($0, payload: UnsafeBufferPointer(start: nil, count: 0)).header }
    }

    /// The stored segment equal to `header`, and the payload segment kept with it; both stored first (`payload`
    /// with it) if the header is new.
    func shared(_ header: UnsafeBufferPointer<UInt8>, payload: UnsafeBufferPointer<UInt8>) -> (header: [UInt8], payload: [UInt8]) {
        segments.withLock { segments in
            if let known = segments.known.first(where: { $0.header.elementsEqual(header) }) { return known }
            let new = (header: Array(header), payload: Array(payload))
            if segments.known.count < Self.capacity {
                segments.known.append(new)
            } else {
                segments.known[segments.next] = new
                segments.next = (segments.next + 1) % Self.capacity
            }
            return new
        }
    }
}
