import HTTPTypes
import NIOHTTP1

/// The fields of a request that the gateway reads, found in one pass over its headers, whichever type holds them:
/// HTTPTypes' `HTTPFields` (the router's requests) or NIO's `HTTPHeaders` (the event loop's, before any
/// conversion). The read-side twin of ``AnswerHeaders``; an HTTP/1 head means here what it means after the
/// HTTPTypes conversion the router's requests go through.
struct RequestFields: Sendable {
    /// The fields read, as ``RequestHeaders`` names them.
    enum Name {
        case authorization, requestID, origin, connection
    }

    /// The `Authorization` value; repeated fields joined with ", ", as `HTTPFields`' subscript joins them.
    private(set) var authorization: String?
    /// The `X-Request-ID` value when exactly one was sent (well-formed or not).
    private(set) var incomingRequestID: String?
    /// The `Origin` value when exactly one was sent (browsers).
    private(set) var origin: String?
    /// Whether any `Origin` field was sent (a browser's request, which needs the router's CORS headers).
    private(set) var hasOrigin = false
    /// Whether the request asks to close the connection. Only an HTTP/1 head has the field (the HTTPTypes
    /// conversion drops it), and ``HTTP1RequestGuard`` has written every request that does as exactly
    /// `Connection: close`.
    private(set) var closesConnection = false

    /// No fields.
    init() {}

    /// The fields of `headers`.
    init(_ headers: some RequestHeaders) {
        var ids = 0
        var origins = 0
        headers.forEachField { name, value in
            switch name {
            case .authorization:
                authorization = authorization.map { "\($0), \(value)" } ?? value
            case .requestID:
                incomingRequestID = value
                ids += 1
            case .origin:
                origin = value
                origins += 1
            case .connection:
                if value == "close" { closesConnection = true }
            }
        }
        if ids != 1 { incomingRequestID = nil }
        hasOrigin = origins > 0
        if origins != 1 { origin = nil }
    }

    /// The request's ID: the caller's `X-Request-ID` when exactly one well-formed was sent, else a new one (each
    /// call makes another: call it once per request).
    func chooseRequestID() -> String {
        RequestIdentifier.chosen(incoming: incomingRequestID)
    }
}

/// A request's header fields, as ``RequestFields`` reads them.
protocol RequestHeaders {
    /// Calls `read` with each field ``RequestFields`` reads, in the order sent; every other field is skipped.
    func forEachField(_ read: (RequestFields.Name, String) -> Void)
}

extension HTTPFields: RequestHeaders {
    func forEachField(_ read: (RequestFields.Name, String) -> Void) {
        for field in self {
            switch field.name {
            case .authorization: read(.authorization, field.value)
            case .xRequestID: read(.requestID, field.value)
            case .origin: read(.origin, field.value)
            case .connection: read(.connection, field.value)
            default: break
            }
        }
    }
}

extension HTTPHeaders: RequestHeaders {
    func forEachField(_ read: (RequestFields.Name, String) -> Void) {
        for (name, value) in self {
            // Lengths first: most fields are none of these, and a length check ends the comparison.
            switch name.utf8.count {
            case 13 where Self.isName(name, "authorization"): read(.authorization, value)
            case 12 where Self.isName(name, "x-request-id"): read(.requestID, value)
            case 6 where Self.isName(name, "origin"): read(.origin, value)
            case 10 where Self.isName(name, "connection"): read(.connection, value)
            default: break
            }
        }
    }

    /// Whether `name` is `lowercased` in any case. OR-ing 0x20 lower-cases ASCII letters and keeps `-`; the only
    /// other byte it maps onto one of these is CR, which a decoded field name never holds.
    private static func isName(_ name: String, _ lowercased: StaticString) -> Bool {
        let expected = UnsafeBufferPointer(start: lowercased.utf8Start, count: lowercased.utf8CodeUnitCount)
        return name.utf8.count == expected.count && zip(name.utf8, expected).allSatisfy { $0 | 0x20 == $1 }
    }
}
