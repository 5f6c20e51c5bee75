import HTTPTypes
import Hummingbird

/// The gateway's paths and the methods each answers, matched exactly as the router matches them.
///
/// A second router holds one GET route per path whose handler answers with that path's `Allow` value; asking it
/// about a request's path tells a known path (405 with `Allow`) from an unknown one (404) without a second,
/// hand-written matcher that could disagree with Hummingbird's. It runs only for requests the real router did
/// not route.
struct RouteTable: Sendable {
    /// One path (in the router's syntax) and its `Allow` value.
    struct Route: Sendable {
        var path: String
        var allow: String
    }

    /// Every route, as given.
    let routes: [Route]
    private let responder: RouterResponder<TokenGateRequestContext>

    init(_ routes: [Route]) {
        self.routes = routes
        let router = Router(context: TokenGateRequestContext.self)
        for route in routes {
            let allow = route.allow
            router.get(RouterPath(route.path)) { _, _ in Response(status: .ok, headers: [.allow: allow]) }
        }
        responder = router.buildResponder()
    }

    /// The `Allow` value of the path `request` names, or `nil` when no route has that path.
    func allowedMethods(at request: Request, context: TokenGateRequestContext) async -> String? {
        let probe = Request(
            head: HTTPRequest(method: .get, scheme: nil, authority: nil, path: request.head.path),
            body: RequestBody(buffer: ByteBuffer())
        )
        guard let response = try? await responder.respond(to: probe, context: context), response.status == .ok else {
            return nil
        }
        return response.headers[.allow]
    }
}
