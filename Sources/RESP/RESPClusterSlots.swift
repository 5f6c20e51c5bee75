package import NIOCore

/// Where Redis Cluster keeps a key: one of 16,384 hash slots, CRC16 (XMODEM) of the key modulo 16,384, or of only
/// its hash tag, the part between the first `{` and the next `}` when that part is not empty (so `a:{trip-1}:x` and
/// `b:{trip-1}:y` share a slot and may be used together in one command or script).
package enum RESPHashSlot {
    /// Slots in a cluster.
    package static let count = 16_384

    /// The slot of `key`.
    package static func of(_ key: ByteBuffer) -> Int {
        key.withUnsafeReadableBytes { bytes in
            var hashed = bytes[...]
            if let open = bytes.firstIndex(of: UInt8(ascii: "{")),
                let close = bytes[(open + 1)...].firstIndex(of: UInt8(ascii: "}")), close > open + 1
            {
                hashed = bytes[(open + 1)..<close]
            }
            return Int(crc16(hashed)) % count
        }
    }

    /// The slot of a text key.
    package static func of(_ key: String) -> Int { of(ByteBuffer(string: key)) }

    /// CRC16-CCITT as Redis Cluster uses it (XMODEM: polynomial 0x1021, initial 0).
    static func crc16(_ bytes: Slice<UnsafeRawBufferPointer>) -> UInt16 {
        var crc: UInt16 = 0
        for byte in bytes {
            crc ^= UInt16(byte) << 8
            for _ in 0..<8 { crc = crc & 0x8000 != 0 ? (crc << 1) ^ 0x1021 : crc << 1 }
        }
        return crc
    }
}

extension RESPCommand {
    /// The key the command is routed by in a cluster: the first key of the commands this client sends (`GET`,
    /// `SET`, `DEL`, `HGETALL`, …: the first argument; `EVAL`/`EVALSHA`: the first of its keys); nil for a
    /// command that names no key (`PING`, `PUBLISH`, `EVALSHA` with none), which any node may answer.
    package var routingKey: ByteBuffer? {
        switch name {
        case "PING", "ECHO", "PUBLISH", "INFO", "CLUSTER", "HELLO", "AUTH", "SELECT", "ROLE", "CLIENT", "CONFIG", "DBSIZE", "SCRIPT":
            return nil
        case "EVAL", "EVALSHA":
            guard arguments.count > 3, let count = Int(String(buffer: arguments[2])), count > 0 else { return nil }
            return arguments[3]
        default:
            return arguments.count > 1 ? arguments[1] : nil
        }
    }
}

/// Which node serves each slot, from `CLUSTER SLOTS`: a node is `host:port`.
struct RESPSlotMap: Sendable {
    private var owners: [String?] = Array(repeating: nil, count: RESPHashSlot.count)

    /// The map `CLUSTER SLOTS` describes: `[[first, last, [host, port, id…], replicas…], …]`; nil when the reply has
    /// another shape.
    init?(clusterSlots reply: RESPValue) {
        guard let ranges = reply.elements else { return nil }
        for range in ranges {
            guard let fields = range.elements, fields.count >= 3, let first = fields[0].integer, let last = fields[1].integer,
                let primary = fields[2].elements, primary.count >= 2, let host = primary[0].string, let port = primary[1].integer,
                0 <= first, first <= last, last < RESPHashSlot.count
            else { return nil }
            for slot in Int(first)...Int(last) { owners[slot] = "\(host):\(port)" }
        }
    }

    init() {}

    /// The node serving `slot`, if known.
    func owner(of slot: Int) -> String? { owners[slot] }

    /// `slot` moved to `node` (a `MOVED` reply).
    mutating func move(_ slot: Int, to node: String) { owners[slot] = node }
}
