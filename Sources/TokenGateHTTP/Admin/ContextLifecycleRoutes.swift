import HTTPTypes
import Hummingbird
import JOSE
import TokenGateCore

/// The trip and vehicle lifecycle API on the admin listener, for an operator's admin key:
///
/// - `POST /admin/v1/providers/{providerId}/contexts/{tokenType}/{contextId}/end` evicts the context's cached
///   tokens and refuses new ones with `410 context_ended` for `endedContexts.refuseFor` (default 24 h);
/// - `DELETE` on the same path lifts it.
///
/// `tokenType` names the kind of entity: `consumer` (a trip), `driver` (a vehicle), `delivery-driver` or
/// `trusted-delivery-driver` (a delivery vehicle: both drivers' tokens), `delivery-consumer` (a tracking or task
/// ID). Tokens already handed out stay valid at Fleet Engine until they expire.
struct ContextLifecycleRoutes: Sendable {
    let service: TokenService

    static let path = "/admin/v1/providers/:providerId/contexts/:tokenType/:contextId/end"

    func register(on router: Router<TokenGateRequestContext>) {
        router.post(RouterPath(Self.path)) { request, context in
            await self.answer(request, context, ending: true)
        }
        router.delete(RouterPath(Self.path)) { request, context in
            await self.answer(request, context, ending: false)
        }
    }

    private func answer(_ request: Request, _ context: TokenGateRequestContext, ending: Bool) async -> Response {
        do throws(TokenGateError) {
            let generation = service.generation
            guard let provider = context.parameters.get("providerId").flatMap(ProviderID.init), generation.providers[provider] != nil else {
                throw TokenGateError(.unknownProvider, "no provider with that ID")
            }
            let admin = try AdminAuthenticator(generation.configuration).authenticate(TokenRoutes.authorization(request.headers), for: provider)
            guard let type = context.parameters.get("tokenType").flatMap(TokenType.init(rawValue:)) else {
                throw TokenGateError(.unknownTokenType, "no such token type")
            }
            guard let id = context.parameters.get("contextId").flatMap(ContextID.init) else {
                throw TokenGateError(.invalidRequest, "the context ID must be 1 to \(ContextID.maxLength) characters of A-Z a-z 0-9 - _ . ~ @ + =")
            }
            guard let key = EndedContexts.Key(provider: provider, tokenType: type, id: id) else {
                throw TokenGateError(.invalidRequest, "\(type) tokens name no single trip, vehicle, task or shipment to end")
            }
            var body: JSONObject = [
                "providerId": .string(provider.rawValue), "tokenType": .string(type.rawValue), "contextId": .string(id.rawValue),
            ]
            if ending {
                let (until, evicted) = await service.contexts.end(key, by: admin)
                body["ended"] = true
                body["endedUntil"] = .integer(until)
                body["evictedTokens"] = .integer(Int64(evicted))
            } else {
                body["ended"] = false
                body["wasEnded"] = .bool(await service.contexts.lift(key, by: admin))
            }
            return TokenRoutes.json(JSON.serialize(.object(body)), status: .ok, cacheControl: "no-store")
        } catch {
            return error.response()
        }
    }
}
