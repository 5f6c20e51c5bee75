/// `/v1/providers/{providerId}/tokens/{tokenType}?{query}` when every path segment is plain text (letters,
/// digits, `-`, `.`, `_`, `~`; not `.` or `..`), so the router would route it to the token route with exactly
/// these parameters: a percent-escape or a dot segment is left to the router. The query is split off as
/// Hummingbird's `URI` does; a target with a fragment is left to the router too.
struct TokenRouteTarget {
    let target: String
    let providerID: String
    let tokenType: String
    let query: String?

    init?(_ target: String) {
        // Over the target's contiguous UTF-8 bytes: through a Substring's views the same scan costs several times as
        // many instructions, on every request.
        var text = target
        guard let parts = text.withUTF8({ Self.split($0) }) else { return nil }
        self.target = target
        (providerID, tokenType, query) = parts
    }

    private static func split(_ target: UnsafeBufferPointer<UInt8>) -> (provider: String, type: String, query: String?)? {
        guard target.count > prefix.count, prefix.indices.allSatisfy({ target[$0] == prefix[$0] }) else { return nil }
        guard let slash = target[prefix.count...].firstIndex(of: UInt8(ascii: "/")),
            target.count - slash > middle.count, middle.indices.allSatisfy({ target[slash + $0] == middle[$0] })
        else { return nil }
        let typeStart = slash + middle.count
        let typeEnd = target[typeStart...].firstIndex { $0 == UInt8(ascii: "?") || $0 == UInt8(ascii: "#") } ?? target.count
        let provider = UnsafeBufferPointer(rebasing: target[prefix.count..<slash])
        let type = UnsafeBufferPointer(rebasing: target[typeStart..<typeEnd])
        guard isPlain(provider), isPlain(type) else { return nil }
        var query: String?
        if typeEnd < target.count {
            let rest = UnsafeBufferPointer(rebasing: target[(typeEnd + 1)...])
            guard target[typeEnd] == UInt8(ascii: "?"), !rest.contains(UInt8(ascii: "#")) else { return nil }
            query = String(decoding: rest, as: UTF8.self)
        }
        return (String(decoding: provider, as: UTF8.self), String(decoding: type, as: UTF8.self), query)
    }

    private static let prefix = Array("/v1/providers/".utf8)
    private static let middle = Array("/tokens/".utf8)

    private static func isPlain(_ segment: UnsafeBufferPointer<UInt8>) -> Bool {
        guard !segment.isEmpty, !segment.allSatisfy({ $0 == UInt8(ascii: ".") }) else { return false }
        return segment.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                true
            default:
                false
            }
        }
    }
}
