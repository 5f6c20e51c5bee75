import HTTPTypes
import Hummingbird
import NIOCore
import NIOHTTP1
import TokenGateCore

/// The answer to a token request (a token or a refusal) through either door: its status, its header fields in the
/// one order both doors send them, written into either header type (``AnswerHeaders``) with no conversion, and its
/// body. Each door then adds its own in the same order: `X-Request-ID`, `Date`, `Server` (and the router a listed
/// browser's CORS fields before them).
struct TokenAnswer: Sendable {
    let status: HTTPResponse.Status
    let body: ByteBuffer
    private let kind: Kind

    private enum Kind: Sendable {
        /// A token, with the limits it was charged to.
        case token(RateLimitHeaders?)
        /// A refusal, whose fields its error names.
        case refusal(TokenGateError)
    }

    /// A token's answer, with `body` its route's rendering of it.
    init(_ grant: TokenGrant, body: ByteBuffer) {
        status = .ok
        kind = .token(grant.rateLimits)
        self.body = body
    }

    /// A refusal's answer: `error`'s status, fields and fixed body.
    init(_ error: TokenGateError) {
        status = error.status
        kind = .refusal(error)
        body = error.bodyBuffer
    }

    /// The answer's fields, in order: `Content-Type`, `Cache-Control`, a refusal's own (`WWW-Authenticate`,
    /// `Retry-After`, its rate limits), `Content-Length`, then a token's rate limits.
    func writeFields<Headers: AnswerHeaders>(into headers: inout Headers) {
        writeFields(into: &headers, adding: nil)
    }

    /// The router's response, with `extra` before `Content-Length` (a 405's `Allow`).
    func response(adding extra: HTTPFields? = nil) -> Response {
        var headers = HTTPFields(reservingCapacity: 10)
        writeFields(into: &headers, adding: extra)
        return Response(status: status, headers: headers, body: .init(byteBuffer: body))
    }

    /// The answer's HTTP/1 head, for the handlers that write HTTP/1 themselves: the status with its reason phrase (as
    /// the HTTPTypes → HTTP/1 conversion writes them), the answer's fields, `X-Request-ID`, then what the door adds:
    /// the event loop's `Date` and `Server` (as Hummingbird's application adds them), a refusal's `Connection: close`.
    func head(requestID: String, date: String? = nil, server: String? = nil, closing: Bool = false) -> HTTPResponseHead {
        var headers = HTTPHeaders(reservingCapacity: 10)
        writeFields(into: &headers)
        headers.append(.xRequestID, requestID)
        if let date { headers.append(.date, date) }
        if let server { headers.append(.server, server) }
        if closing { headers.append(.connection, "close") }
        return HTTPResponseHead(
            version: .http1_1, status: HTTPResponseStatus(statusCode: status.code, reasonPhrase: status.reasonPhrase), headers: headers)
    }

    private func writeFields<Headers: AnswerHeaders>(into headers: inout Headers, adding extra: HTTPFields?) {
        headers.append(Self.jsonContentType)
        headers.append(Self.noStore)
        if case .refusal(let error) = kind {
            if error.code == .unauthenticated { headers.append(Self.bearerChallenge) }
            if let retryAfterSeconds = error.retryAfterSeconds { headers.append(.retryAfter, String(retryAfterSeconds)) }
            Self.append(error.rateLimitHeaders, to: &headers)
        }
        if let extra { for field in extra { headers.append(field) } }
        headers.append(.contentLength, String(body.readableBytes))
        if case .token(let limits) = kind { Self.append(limits, to: &headers) }
    }

    /// `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers), when the provider has limits.
    private static func append(_ limits: RateLimitHeaders?, to headers: inout some AnswerHeaders) {
        guard let limits else { return }
        headers.append(.rateLimitPolicy, limits.policy)
        if let status = limits.status { headers.append(.rateLimit, status) }
    }

    /// A JSON answer's first fields. One allocation with room for what follows (the rate limits', Content-Length,
    /// X-Request-ID, Date, Server): no regrowth.
    static func jsonHeaders(cacheControl: String) -> HTTPFields {
        var headers = HTTPFields(reservingCapacity: 10)
        headers.append(jsonContentType)
        if cacheControl == "no-store" { headers.append(noStore) } else { headers.append(.cacheControl, cacheControl) }
        return headers
    }

    // Made once: a field checks its value when it is made, and every token answer and refusal sends these.
    private static let jsonContentType = HTTPField(name: .contentType, value: "application/json")
    private static let noStore = HTTPField(name: .cacheControl, value: "no-store")
    private static let bearerChallenge = HTTPField(name: .wwwAuthenticate, value: #"Bearer realm="tokengate""#)
}
