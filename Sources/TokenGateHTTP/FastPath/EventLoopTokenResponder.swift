import HTTPTypes
import NIOCore
import NIOHTTP1
import TokenGateCore

/// The event loop's door to the ``TokenEndpoint``: a token request's answer without Hummingbird's request task, as
/// an HTTP/1 head and body.
///
/// It picks the requests the endpoint may answer (``route(of:)``) and writes an answer's head as the router's would
/// be: the endpoint's fields, then `X-Request-ID`, `Date` and `Server`.
struct EventLoopTokenResponder: Sendable {
    let endpoint: TokenEndpoint
    /// The `Server` header's value, as the application sends it.
    private let serverName: String

    init(endpoint: TokenEndpoint, serverName: String) {
        self.endpoint = endpoint
        self.serverName = serverName
    }

    /// The token route target of `request` when it may be one the endpoint answers: a GET of the token route's
    /// plain path. Cheap, and nil for every other request, which is then passed on at once (its body streams to the
    /// router).
    func route(of request: HTTPRequestHead) -> TokenRouteTarget? {
        guard request.method == .GET else { return nil }
        return TokenRouteTarget(request.uri)
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
