import HTTPTypes
import Hummingbird
import JOSE
import TokenGateCore

/// `POST /events/v1/pubsub/{providerId}` on the admin listener: the push endpoint of a Pub/Sub subscription that
/// carries the provider's Fleet Engine log entries (see ``FleetEventReceiver``).
///
/// A push whose OIDC token does not pass is answered `401` (Pub/Sub retries it, and the failure is counted), and so
/// is one to a path naming no provider with `events:`: the route does not tell which tenants receive events. Refused
/// pushes are limited per client address as wrong admin keys are (past the limit `429` with `Retry-After`, counted,
/// not logged) and logged in aggregate; a verified push is never limited. Every verified push is answered `200` with what it did, so Pub/Sub never
/// retries what cannot be acted on; but one whose end the provider's list has no room for is `507`, and delivered
/// again.
struct FleetEventRoutes: Sendable {
    let receiver: FleetEventReceiver
    /// Refused pushes per client address.
    let refusedPushes: RateLimiter<PeerAddress?>

    init(receiver: FleetEventReceiver, clock: TokenGateClock) {
        self.receiver = receiver
        refusedPushes = RateLimiter(limit: RateLimitSettings.defaultFailedAuthPerPeer, maxKeys: 10_000, clock: clock)
    }

    static let path = "/events/v1/pubsub/:providerId"

    func register(on router: Router<TokenGateRequestContext>) {
        router.post(RouterPath(Self.path)) { request, context in
            await self.answer(request, context)
        }
    }

    private func answer(_ request: Request, _ context: TokenGateRequestContext) async -> Response {
        let push: FleetEventReceiver.VerifiedPush
        let provider = context.parameters.get("providerId").flatMap(ProviderID.init)
        do {
            push = try receiver.authenticate(provider, authorization: RequestFields(request.headers).authorization)
        } catch {
            if let seconds = refusedPushes.acquire(context.peer).retryAfterSeconds {
                receiver.recordRateLimited(provider)
                return TokenGateError(.rateLimited, "too many refused pushes from this address", retryAfterSeconds: seconds).response()
            }
            return error.response()
        }
        let body = try? await request.body.collect(upTo: FleetEventReceiver.maxBodyBytes)
        let receipt = await receiver.receive(push, body: body.map { Array(buffer: $0) })
        // No room to end it: Pub/Sub must deliver it again, so the push is not acknowledged.
        if receipt.outcome == .full { return TokenGateError(.endedListFull, receipt.reason ?? "").response() }
        var answer: JSONObject = ["outcome": .string(receipt.outcome.rawValue)]
        answer["contexts"] = .array(
            receipt.changed.map { .object(["tokenType": .string($0.type.rawValue), "contextId": .string($0.id.rawValue)]) })
        if let reason = receipt.reason { answer["reason"] = .string(reason) }
        return TokenRoutes.json(JSON.serialize(.object(answer)), status: .ok, cacheControl: "no-store")
    }
}
