import HTTPTypes
import NIOCore
import NIOHTTP1
import TokenGateCore

/// The token route's answer to a token request, without Hummingbird's request task.
///
/// It runs the token route's own code: the route's `query(target:…)` builds the query,
/// ``TokenService/cachedToken(for:)`` runs the service's checks and the cache synchronously, and what needs
/// waiting (a miss, a refresh-ahead, a tenant's authorizer, shared state) goes on, admitted, to the rest of the
/// service's full path, the one the router's call runs. The answer carries the same status, headers in the same order, and body the router's
/// would (the request ID, `Date` and `Server` included). What the router must shape (another route or method, a
/// browser's request and its CORS headers, a `Connection: close`) is passed on, uncharged, to the router.
struct CachedTokenResponder: Sendable {
    let routes: TokenRoutes
    /// The `Server` header's value, as the application sends it.
    private let serverName: String

    init(routes: TokenRoutes, serverName: String) {
        self.routes = routes
        self.serverName = serverName
    }

    enum Answer {
        case response(HTTPResponseHead, body: ByteBuffer)
        /// Admitted, but only the service's full path can answer: ``fetch(_:)`` it. No limit was charged.
        case fetch(TokenAdmission)
        /// For the router: nothing was counted or charged.
        case passOn
    }

    /// A token request's answer (a token or a refusal, decided here or by the service's full path): its status,
    /// fields and body, without the fields of the moment (``head(of:date:)`` adds them).
    struct TokenAnswer: Sendable {
        let status: HTTPResponse.Status
        /// The fields before `Content-Length`.
        let headers: HTTPHeaders
        /// A token's rate-limit fields, which come after `Content-Length`.
        var rateLimits: RateLimitHeaders? = nil
        let body: ByteBuffer
        let requestID: String

        /// A token's answer.
        init(_ grant: TokenGrant, body: ByteBuffer, requestID: String) {
            status = .ok
            headers = TokenRoutes.jsonHeaders(cacheControl: "no-store", as: HTTPHeaders.self)
            rateLimits = grant.rateLimits
            self.body = body
            self.requestID = requestID
        }

        /// A refusal's answer.
        init(_ error: TokenGateError, requestID: String) {
            status = error.status
            headers = error.headers(as: HTTPHeaders.self)
            body = error.bodyBuffer
            self.requestID = requestID
        }
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
        let fields = TokenRequestFields(request.headers)
        // Hummingbird closes the connection after such an answer; browsers' requests need CORS headers.
        guard !fields.closesConnection, !fields.hasOrigin else { return .passOn }
        let query: TokenQuery
        do throws(TokenGateError) {
            query = try routes.query(
                target: route.target, authorization: fields.authorization, providerID: route.providerID, peer: peer,
                requestID: fields.requestID
            ) { () throws(TokenGateError) in
                (route.tokenType, try QueryParameters.parse(route.query, limits: routes.limits))
            } deniedType: {
                route.tokenType
            }
        } catch {
            return response(to: error, requestID: fields.requestID, date: date)
        }
        switch routes.service.cachedToken(for: query) {
        case .granted(let grant):
            TokenResponse.write(grant, now: routes.clock.wallSeconds(), into: &body)
            return response(TokenAnswer(grant, body: body, requestID: fields.requestID), date: date)
        case .refused(let error):
            return response(to: error, requestID: fields.requestID, date: date)
        case .needsFullPath(let admission):
            return .fetch(admission)
        }
    }

    /// The answer to `admission` (from ``answer(_:route:peer:date:body:)``) by the service's full path: the token route's
    /// own rendering of a grant or of an error.
    func fetch(_ admission: TokenAdmission) async -> TokenAnswer {
        let requestID = admission.requestID ?? ""
        do throws(TokenGateError) {
            let grant = try await routes.service.token(for: admission)
            return TokenAnswer(grant, body: TokenRoutes.tokenBody(grant, clock: routes.clock), requestID: requestID)
        } catch {
            return TokenAnswer(error, requestID: requestID)
        }
    }

    /// ``fetch(_:)`` without a task, when the only wait is the shared limits' check for a cached token (see
    /// ``TokenService/token(afterSharedLimits:completion:)``): `completion` gets the answer once. False when only
    /// ``fetch(_:)`` can answer.
    func fetchWithoutTask(_ admission: TokenAdmission, completion: @escaping @Sendable (TokenAnswer) -> Void) -> Bool {
        let (requestID, clock) = (admission.requestID ?? "", routes.clock)
        return routes.service.token(afterSharedLimits: admission) { result in
            switch result {
            case .success(let grant):
                completion(TokenAnswer(grant, body: TokenRoutes.tokenBody(grant, clock: clock), requestID: requestID))
            case .failure(let error):
                completion(TokenAnswer(error, requestID: requestID))
            }
        }
    }

    /// The response head the router's answer has for `answer`, with `date` for the `Date` header: HTTP/1.1, the
    /// status with its reason phrase (as the HTTPTypes → HTTP/1 conversion writes them), then the fields in the
    /// router's order and spelling: the route's, `Content-Length` (Hummingbird's `Response`), a token's rate
    /// limits (the token route), `X-Request-ID` (``GatewayMiddleware``), `Date` and `Server` (Hummingbird's
    /// application).
    func head(of answer: TokenAnswer, date: String) -> HTTPResponseHead {
        var headers = answer.headers
        headers.append(.contentLength, String(answer.body.readableBytes))
        TokenRoutes.appendRateLimits(answer.rateLimits, to: &headers)
        headers.append(.xRequestID, answer.requestID)
        headers.append(.date, date)
        headers.append(.server, serverName)
        let status = HTTPResponseStatus(statusCode: answer.status.code, reasonPhrase: answer.status.reasonPhrase)
        return HTTPResponseHead(version: .http1_1, status: status, headers: headers)
    }

    private func response(to error: TokenGateError, requestID: String, date: String) -> Answer {
        response(TokenAnswer(error, requestID: requestID), date: date)
    }

    private func response(_ answer: TokenAnswer, date: String) -> Answer {
        .response(head(of: answer, date: date), body: answer.body)
    }
}

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
