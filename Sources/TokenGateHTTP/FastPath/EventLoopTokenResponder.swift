import HTTPTypes
import NIOCore
import NIOHTTP1
import TokenGateCore

/// The event loop's door to the ``TokenEndpoint``: a token request's answer without Hummingbird's request task, as
/// an HTTP/1 head and body.
///
/// The endpoint answers what it decides at once (a cached token, a refusal), admits what needs waiting for
/// ``TokenEndpoint/finish(_:)``, and passes on, uncharged, what the router must shape (a browser's request and its CORS fields, a
/// `Connection: close`); another route or method never reaches it (``route(of:)``). The head carries what the
/// router's answer would: the endpoint's fields, then `X-Request-ID`, `Date` and `Server`.
struct EventLoopTokenResponder: Sendable {
    let endpoint: TokenEndpoint
    /// The `Server` header's value, as the application sends it.
    private let serverName: String

    init(endpoint: TokenEndpoint, serverName: String) {
        self.endpoint = endpoint
        self.serverName = serverName
    }

    enum Answer {
        case response(HTTPResponseHead, body: ByteBuffer)
        /// Admitted, but only the service's full path can answer: ``TokenEndpoint/finish(_:)`` it. No limit was charged.
        case fetch(TokenAdmission)
        /// For the router: nothing was counted or charged.
        case passOn
    }

    /// The token route target of `request` when it may be one this answers: a GET of the token route's plain
    /// path. Cheap, and nil for every other request, which is then passed on at once (its body streams to the
    /// router).
    func route(of request: HTTPRequestHead) -> TokenRouteTarget? {
        guard request.method == .GET else { return nil }
        return TokenRouteTarget(request.uri)
    }

    /// The answer to `request` for `route` (from ``route(of:)``), whose body was empty, from `peer`, with `date` for
    /// the `Date` header. A token's body is written into `body` (the connection's buffer, reused once sent).
    func answer(_ request: HTTPRequestHead, route: TokenRouteTarget, peer: PeerAddress?, date: String, body: inout ByteBuffer) -> Answer {
        switch endpoint.answer(route, fields: RequestFields(request.headers), peer: peer, body: &body) {
        case .answer(let answer, let requestID): .response(head(of: answer, requestID: requestID, date: date), body: answer.body)
        case .later(let admission): .fetch(admission)
        case .notMine: .passOn
        }
    }

    /// The response head the router's answer has: HTTP/1.1, the status with its reason phrase (as the HTTPTypes →
    /// HTTP/1 conversion writes them), the endpoint's fields (``TokenAnswer/writeFields(into:)``), then
    /// `X-Request-ID` (``GatewayMiddleware``), `Date` and `Server` (Hummingbird's application), spelled as
    /// HTTPTypes spells them.
    func head(of answer: TokenAnswer, requestID: String, date: String) -> HTTPResponseHead {
        var headers = HTTPHeaders(reservingCapacity: 10)
        answer.writeFields(into: &headers)
        headers.append(.xRequestID, requestID)
        headers.append(.date, date)
        headers.append(.server, serverName)
        let status = HTTPResponseStatus(statusCode: answer.status.code, reasonPhrase: answer.status.reasonPhrase)
        return HTTPResponseHead(version: .http1_1, status: status, headers: headers)
    }
}
