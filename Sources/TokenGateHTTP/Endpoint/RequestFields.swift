import HTTPTypes
import NIOHTTP1

/// The request fields the gateway reads, in one pass over either header type: `HTTPFields` (the router's) or NIO's
/// `HTTPHeaders` (the event loop's, unconverted), with the same meaning. The read-side twin of ``AnswerHeaders``.
struct RequestFields: Sendable {
    /// The `Authorization` value; repeated fields joined with ", ", as `HTTPFields`' subscript joins them.
    private(set) var authorization: String?
    /// The `X-Request-ID` value when exactly one was sent (well-formed or not).
    private(set) var incomingRequestID: String?
    /// The `Origin` value when exactly one was sent (browsers).
    private(set) var origin: String?
    /// Whether any `Origin` field was sent (a browser's request, which needs the router's CORS headers).
    private(set) var hasOrigin = false
    /// Whether the request asks to close the connection: only an HTTP/1 head has the field, written as exactly
    /// `Connection: close` by ``HTTP1RequestGuard``.
    private(set) var closesConnection = false

    /// No fields.
    init() {}

    /// The fields of `headers`.
    init(_ headers: some RequestHeaders) {
        var ids = 0
        var origins = 0
        headers.forEachField { name, value in
            // Lengths first: most fields are none of these, and a length check ends the comparison.
            switch name.utf8.count {
            case 13 where Self.isName(name, "authorization"):
                authorization = authorization.map { "\($0), \(value)" } ?? value
            case 12 where Self.isName(name, "x-request-id"):
                incomingRequestID = value
                ids += 1
            case 6 where Self.isName(name, "origin"):
                origin = value
                origins += 1
            case 10 where Self.isName(name, "connection"):
                if value == "close" { closesConnection = true }
            default:
                break
            }
        }
        if ids != 1 { incomingRequestID = nil }
        hasOrigin = origins > 0
        if origins != 1 { origin = nil }
    }

    /// The caller's `X-Request-ID` when exactly one well-formed was sent, else a new one (call it once per request).
    func chooseRequestID() -> String {
        RequestIdentifier.chosen(incoming: incomingRequestID)
    }

    /// The W3C `traceparent` value of `headers` when exactly one was sent: all a traced gateway's door reads
    /// before it decides (``TraceSampler``), so an untraced request's fields stay as small as they were.
    static func traceparent(of headers: some RequestHeaders) -> String? {
        var (value, count): (String?, Int) = (nil, 0)
        headers.forEachField { name, fieldValue in
            guard name.utf8.count == 11, isName(name, "traceparent") else { return }
            value = fieldValue
            count += 1
        }
        return count == 1 ? value : nil
    }

    /// Whether `name` is `lowercased` in any case. OR-ing 0x20 lower-cases ASCII letters and keeps `-`; the only
    /// other byte it maps onto one of these is CR, which a decoded field name never holds.
    private static func isName(_ name: String, _ lowercased: StaticString) -> Bool {
        let expected = UnsafeBufferPointer(start: lowercased.utf8Start, count: lowercased.utf8CodeUnitCount)
        return name.utf8.count == expected.count && zip(name.utf8, expected).allSatisfy { $0 | 0x20 == $1 }
    }
}

/// A request's header fields, as ``RequestFields`` reads them.
protocol RequestHeaders {
    /// Calls `read` with each field's name (in any case) and value, in the order sent.
    func forEachField(_ read: (_ name: String, _ value: String) -> Void)
}

extension HTTPFields: RequestHeaders {
    func forEachField(_ read: (String, String) -> Void) {
        for field in self { read(field.name.rawName, field.value) }
    }
}

extension HTTPHeaders: RequestHeaders {
    func forEachField(_ read: (String, String) -> Void) {
        for (name, value) in self { read(name, value) }
    }
}
