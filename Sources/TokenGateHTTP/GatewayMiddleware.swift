import HTTPTypes
import Hummingbird
import Logging
import TokenGateCore

/// The outermost middleware: gives every request its ID and its client's address, and turns every error into TokenGate's JSON answer.
///
/// Hummingbird lets a router customise "not found" only through middleware (its `NotFoundResponder` throws
/// `HTTPError(.notFound)` through the router's middleware stack, for an unknown path and for a known path with an
/// unrouted method alike), so this is the one place that sees every routed request and every error: it tells
/// the two not-founds apart with ``RouteTable`` (404 `not_found`, or 405 `method_not_allowed` with `Allow`),
/// renders `TokenGateError`s, and makes anything else a logged 500 `internal_error`. Errors the HTTP parser
/// raises before a request exists are answered by ``HTTP1RequestGuard``.
struct GatewayMiddleware: RouterMiddleware {
    typealias Context = TokenGateRequestContext

    let routes: RouteTable
    /// Counts the errors answered here that no token route saw (unknown paths, wrong methods, unexpected errors).
    let metrics: GatewayMetrics?
    /// Finds the client behind a trusted proxy, or nil where no proxy is trusted (the admin listener).
    var addressing: ClientAddressing? = nil

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        context.fields = RequestFields(request.headers)
        context.requestID = context.fields.chooseRequestID()
        if let addressing { context.peer = addressing.client(peer: context.peer, headers: request.headers) }

        var response: Response
        do {
            response = try await next(request, context)
        } catch {
            response = await self.response(to: error, request, context)
        }
        response.headers.append(HTTPField(name: .xRequestID, value: context.requestID))
        // No route answers HEAD, so this is a 405 whose body must not be sent (RFC 9110 §9.3.2).
        if request.method == .head { response = response.createHeadResponse() }
        return response
    }

    private func response(to error: any Error, _ request: Request, _ context: Context) async -> Response {
        switch error {
        case let error as TokenGateError:
            return error.response()
        case let error as HTTPError where error.status == .notFound:
            guard let allow = await routes.allowedMethods(at: request, context: context) else {
                metrics?.recordHTTPError(.notFound)
                return TokenGateError(.notFound, "no route").response()
            }
            metrics?.recordHTTPError(.methodNotAllowed)
            return TokenGateError(.methodNotAllowed, "method not routed").response(adding: [.allow: allow])
        default:
            // A bug, not input: logged with what identifies the request, never the request's own text.
            context.logger.error(
                "request failed with an unexpected error",
                metadata: [
                    "request_id": "\(context.requestID)", "peer": "\(context.peer.map(String.init(describing:)) ?? "unknown")",
                    "error_type": "\(String(reflecting: type(of: error)))",
                ])
            metrics?.recordHTTPError(.internalError)
            return TokenGateError(.internalError, "unexpected error").response()
        }
    }
}

extension HTTPField.Name {
    /// `X-Request-ID`: the request's ID, in requests (honoured when well-formed) and in every response.
    static let xRequestID = HTTPField.Name("X-Request-ID")!
    /// draft-ietf-httpapi-ratelimit-headers: the limits a token answer was charged to, and how much of one is left.
    static let rateLimitPolicy = HTTPField.Name("RateLimit-Policy")!
    static let rateLimit = HTTPField.Name("RateLimit")!
}
