import NIOHTTP1

/// The fields of an HTTP/1 request head that the token route reads, found in one pass over the head as NIO decoded
/// it, with the meaning they have after the HTTPTypes conversion the router's requests go through.
struct TokenRequestFields {
    /// The `Authorization` value; repeated fields joined with ", ", as `HTTPFields`' subscript joins them.
    private(set) var authorization: String?
    /// The request's ID: the caller's `X-Request-ID` when exactly one well-formed was sent, else a new one.
    let requestID: String
    /// Whether an `Origin` field was sent (a browser's request, which needs the router's CORS headers).
    private(set) var hasOrigin = false
    /// Whether the request asks to close the connection. ``HTTP1RequestGuard`` has written every request that
    /// does as exactly `Connection: close`.
    private(set) var closesConnection = false

    init(_ headers: HTTPHeaders) {
        var incomingID: String?
        var idCount = 0
        for (name, value) in headers {
            // Lengths first: most fields are none of these, and a length check ends the comparison.
            switch name.utf8.count {
            case 13 where Self.isName(name, "authorization"):
                authorization = authorization.map { "\($0), \(value)" } ?? value
            case 12 where Self.isName(name, "x-request-id"):
                incomingID = value
                idCount += 1
            case 6 where Self.isName(name, "origin"):
                hasOrigin = true
            case 10 where Self.isName(name, "connection"):
                if value == "close" { closesConnection = true }
            default:
                break
            }
        }
        requestID = RequestIdentifier.chosen(incoming: idCount == 1 ? incomingID : nil)
    }

    /// Whether `name` is `lowercased` in any case. OR-ing 0x20 lower-cases ASCII letters and keeps `-`; the only
    /// other byte it maps onto one of these is CR, which a decoded field name never holds.
    private static func isName(_ name: String, _ lowercased: StaticString) -> Bool {
        let expected = UnsafeBufferPointer(start: lowercased.utf8Start, count: lowercased.utf8CodeUnitCount)
        return name.utf8.count == expected.count && zip(name.utf8, expected).allSatisfy { $0 | 0x20 == $1 }
    }
}
