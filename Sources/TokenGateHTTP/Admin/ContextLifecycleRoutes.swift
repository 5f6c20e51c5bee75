import HTTPTypes
import Hummingbird
import JOSE
import Logging
import TokenGateCore

/// The trip and vehicle lifecycle API on the admin listener, for an operator's admin key:
///
/// - `POST /admin/v1/providers/{providerId}/contexts/{tokenType}/{contextId}/end` evicts the context's cached
///   tokens and refuses new ones with `410 context_ended` for `endedContexts.refuseFor` (default 24 h);
/// - `DELETE` on the same path lifts it.
///
/// `tokenType` names the kind of entity: `consumer` (a trip), `driver` (a vehicle), `delivery-driver` or
/// `trusted-delivery-driver` (a delivery vehicle: both drivers' tokens), `delivery-consumer` (a tracking or task
/// ID). The `contextId` segment is percent-decoded as UTF-8 (`%20` a space; `+` is a plus in a path). Tokens already
/// handed out stay valid at Fleet Engine until they expire.
///
/// The key is checked before anything else, the provider included. Wrong keys are counted
/// (`tokengate_admin_auth_failures_total`), logged, and limited per client address like callers' (60 a minute, 20
/// at once): past the limit a wrong key is answered `429` with `Retry-After`; a right key never is.
struct ContextLifecycleRoutes: Sendable {
    let service: TokenService
    /// Wrong admin keys per client address.
    let failedKeys: RateLimiter<PeerAddress?>

    init(service: TokenService) {
        self.service = service
        failedKeys = RateLimiter(limit: RateLimitSettings.defaultFailedAuthPerPeer, maxKeys: 10_000, clock: service.clock)
    }

    static let path = "/admin/v1/providers/:providerId/contexts/:tokenType/:contextId/end"
    /// Many contexts of one provider at once: `{"contexts": [{"tokenType": …, "contextId": …}, …]}`, at most
    /// ``batchLimit``, all ended or none.
    static let batchPath = "/admin/v1/providers/:providerId/contexts/end"
    /// The most contexts one batch ends.
    static let batchLimit = 1000
    /// The largest batch body read.
    static let batchBodyLimit = 256 * 1024

    func register(on router: Router<TokenGateRequestContext>) {
        router.post(RouterPath(Self.path)) { request, context in
            await self.answer(request, context, ending: true)
        }
        router.post(RouterPath(Self.batchPath)) { request, context in
            await self.answerBatch(request, context)
        }
        router.delete(RouterPath(Self.path)) { request, context in
            await self.answer(request, context, ending: false)
        }
    }

    private func answer(_ request: Request, _ context: TokenGateRequestContext, ending: Bool) async -> Response {
        do throws(TokenGateError) {
            let (admin, provider) = try admitted(request, context)
            let type = context.parameters.get("tokenType") ?? ""
            let segment = context.parameters.get("contextId") ?? ""
            let key = try Self.key(provider: provider, type: type, id: PercentDecoding.text(of: segment[...], plusIsSpace: false))
            let id = key.id
            var body: JSONObject = ["providerId": .string(provider.rawValue), "tokenType": .string(type), "contextId": .string(id.rawValue)]
            if ending {
                let (until, evicted) = try await service.contexts.end(key, by: admin.name)
                body["ended"] = true
                body["endedUntil"] = .integer(until)
                body["evictedTokens"] = .integer(Int64(evicted))
            } else {
                body["ended"] = false
                body["wasEnded"] = .bool(await service.contexts.lift(key, by: admin.name) == .lifted)
            }
            return TokenRoutes.json(JSON.serialize(.object(body)), status: .ok, cacheControl: "no-store")
        } catch {
            return error.response()
        }
    }

    /// `POST …/contexts/end` with a list: every context ended, or none (`ended_list_full`, or a bad entry named by
    /// its index).
    private func answerBatch(_ request: Request, _ context: TokenGateRequestContext) async -> Response {
        do throws(TokenGateError) {
            let (admin, provider) = try admitted(request, context)
            let body: ByteBuffer
            do {
                body = try await request.body.collect(upTo: Self.batchBodyLimit)
            } catch {
                throw TokenGateError(.invalidRequest, "the body is over \(Self.batchBodyLimit) bytes")
            }
            guard case .object(let object)? = try? JSON.parse(Array(buffer: body)), case .array(let entries)? = object["contexts"],
                object.count == 1, (1...Self.batchLimit).contains(entries.count)
            else {
                throw TokenGateError(.invalidRequest, "the body must be {\"contexts\": [...]} with 1 to \(Self.batchLimit) entries")
            }
            var keys: [EndedContexts.Key] = []
            for (index, entry) in entries.enumerated() {
                guard case .object(let fields) = entry, fields.count == 2, let type = fields["tokenType"]?.stringValue,
                    let id = fields["contextId"]?.stringValue
                else { throw TokenGateError(.invalidRequest, "contexts[\(index)] must be {\"tokenType\": …, \"contextId\": …}") }
                do {
                    keys.append(try Self.key(provider: provider, type: type, id: id))
                } catch {
                    let reason = "contexts[\(index)]: \(error.reason)"
                    if let refusal = error.refusedID { throw TokenGateError(refusing: refusal, reason: reason) }
                    throw TokenGateError(error.code, reason)
                }
            }
            let (until, evicted) = try await service.contexts.end(keys, of: provider, by: admin.name)
            let answer: JSONObject = [
                "providerId": .string(provider.rawValue), "ended": .integer(Int64(keys.count)), "endedUntil": .integer(until),
                "evictedTokens": .integer(Int64(evicted)),
            ]
            return TokenRoutes.json(JSON.serialize(.object(answer)), status: .ok, cacheControl: "no-store")
        } catch {
            return error.response()
        }
    }

    /// The admin key of `request` and the provider its path names, which the key must be allowed to act for.
    private func admitted(
        _ request: Request, _ context: TokenGateRequestContext
    ) throws(TokenGateError) -> (admin: AuthenticatedAdmin, provider: ProviderID) {
        let generation = service.generation
        let admin = try authenticate(request, context, generation: generation)
        let named = context.parameters.get("providerId").flatMap(ProviderID.init)
        do {
            try admin.authorize(for: named)
        } catch {
            generation.metrics.recordAdminAuthFailure(error.code)
            context.logger.warning(
                "admin API: a provider's admin key used for another provider",
                metadata: ["admin_key": "\(admin.name)", "request_id": "\(context.requestID)"])
            throw error
        }
        guard let provider = named, generation.providers[provider] != nil else {
            throw TokenGateError(.unknownProvider, "no provider with that ID")
        }
        return (admin, provider)
    }

    /// The ended-contexts key of a context of `provider` named by its token type and ID (nil: its bytes were not
    /// UTF-8). An ID that breaks Fleet Engine's rule is refused naming `contextId` and the rule.
    static func key(provider: ProviderID, type name: String, id text: String?) throws(TokenGateError) -> EndedContexts.Key {
        guard let type = TokenType(rawValue: name) else { throw TokenGateError(.unknownTokenType, "no such token type") }
        guard let text else { throw TokenGateError(refusing: ContextID.Refusal(.contextId, .invalidUTF8)) }
        let id: ContextID
        do {
            id = try ContextID(validating: text)
        } catch {
            throw TokenGateError(refusing: ContextID.Refusal(.contextId, error))
        }
        guard let key = EndedContexts.Key(provider: provider, tokenType: type, id: id) else {
            throw TokenGateError(.invalidRequest, "\(type) tokens name no single trip, vehicle, task or shipment to end")
        }
        return key
    }

    /// The admin key of `request`; a wrong one is charged to its address, counted and logged (until the address
    /// is past its limit: then answered 429, counted, not logged again).
    private func authenticate(
        _ request: Request, _ context: TokenGateRequestContext, generation: GatewayGeneration
    ) throws(TokenGateError) -> AuthenticatedAdmin {
        do {
            return try AdminAuthenticator(generation.configuration).authenticate(RequestFields(request.headers).authorization)
        } catch {
            let decision = failedKeys.acquire(context.peer)
            if let seconds = decision.retryAfterSeconds {
                generation.metrics.recordAdminAuthFailure(.rateLimited)
                throw TokenGateError(.rateLimited, "too many wrong admin keys from this address", retryAfterSeconds: seconds)
            }
            generation.metrics.recordAdminAuthFailure(error.code)
            context.logger.warning(
                "admin API: wrong admin key",
                metadata: [
                    "code": "\(error.code)", "reason": "\(error.reason)", "peer": "\(context.peer.map(String.init(describing:)) ?? "unknown")",
                    "request_id": "\(context.requestID)",
                ])
            throw error
        }
    }
}
