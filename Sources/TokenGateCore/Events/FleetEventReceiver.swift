import Foundation
import JOSE
import Logging
import Synchronization

/// Takes Fleet Engine's log entries as a Pub/Sub push subscription delivers them and ends the contexts they finish,
/// exactly as the admin API would (every replica told, cached tokens evicted, `410 context_ended` from then on).
///
/// A push is first authenticated: its `Authorization: Bearer` OIDC token must be signed by a key Google publishes
/// (``FleetEventSettings/keysURL``, through the shared key-set directory), name `https://accounts.google.com` as
/// `iss`, the configured `audience`, and the push subscription's service account as a verified `email`. An
/// unverified push changes nothing and is refused. A verified one is always acknowledged (Pub/Sub retries anything
/// else for days): an entry that is unrelated, malformed, about another project or a context already ended is
/// counted and answered, never retried. Pub/Sub delivers at least once, so the same push twice ends a context once.
package struct FleetEventReceiver: Sendable {
    let service: TokenService
    /// Refused pushes, logged in aggregate: the push route faces the Internet.
    private let refusals: RefusalTally

    /// What a verified push did (the metric's `outcome`, and the answer's). `full`: the provider's list of ended
    /// contexts had no room, so the push is answered as an error and Pub/Sub delivers it again later.
    package enum Outcome: String, Sendable {
        case ended, lifted, kept, duplicate, ignored, malformed, full
    }

    /// A verified push's answer.
    package struct Receipt: Sendable {
        package var outcome: Outcome
        /// The contexts it ended (or lifted), as `(token type, ID)`.
        package var changed: [(type: TokenType, id: ContextID)]
        /// Why it did nothing, when it did nothing.
        package var reason: String?
    }

    /// A push whose token passed, for the provider it was sent to.
    package struct VerifiedPush: Sendable {
        let provider: ProviderID
        let settings: FleetEventSettings
    }

    /// The largest push body read; Fleet Engine splits its log entries at 250 KB.
    package static let maxBodyBytes = 1 << 20

    /// A receiver of pushes for `service`'s providers.
    package init(service: TokenService) {
        self.service = service
        self.refusals = RefusalTally(clock: service.clock, logger: service.logger)
    }

    /// Checks the push's OIDC token for `provider`; throws `unauthenticated` (counted, reason logged in aggregate) for a
    /// token that does not pass, and the same for a path naming no provider with `events:`, so the route does not
    /// tell which tenants receive events.
    package func authenticate(_ provider: ProviderID?, authorization: String?) throws(TokenGateError) -> VerifiedPush {
        let generation = service.generation
        guard let provider, let runtime = generation.providers[provider], let events = runtime.events else {
            generation.metrics.recordFleetEvent(nil, outcome: "unauthenticated")
            refusals.record(provider: nil, reason: "no provider with fleet events at that path")
            throw TokenGateError(.unauthenticated, "no provider with fleet events at that path")
        }
        do {
            try verify(authorization, events: events)
        } catch {
            generation.metrics.recordFleetEvent(provider, outcome: "unauthenticated")
            refusals.record(provider: provider, reason: error.reason)
            throw error
        }
        return VerifiedPush(provider: provider, settings: events.settings)
    }

    /// Counts a push refused for too many refusals from its address (answered 429, not logged one by one).
    package func recordRateLimited(_ provider: ProviderID?) {
        let configured = provider.flatMap { service.generation.providers[$0]?.events } != nil
        service.generation.metrics.recordFleetEvent(configured ? provider : nil, outcome: "rate_limited")
    }

    private func verify(_ authorization: String?, events: ProviderEvents) throws(TokenGateError) {
        let token = try BearerCredential.parse(authorization)
        let clock = service.clock
        guard let keys = events.keySet.current() else {
            events.keySet.requestEarlyRefresh(now: clock.monotonicNanoseconds())
            throw TokenGateError(.unauthenticated, "Google's OIDC keys (\(events.keySet.url)) are not fetched yet")
        }
        var policy = ValidationPolicy()
        policy.allowedAlgorithms = [.rs256]
        policy.audiences = [events.settings.audience]
        policy.maxLifetime = 3600
        policy.requireKeyID = true
        let verified: VerifiedJWT
        do {
            verified = try JWTVerifier(keys: keys).verify(token, policy: policy, now: clock.wallSeconds())
        } catch {
            // Google rotates its OIDC keys: an unknown kid asks for the set again (rate-limited), and Pub/Sub retries.
            if error.reason == .unknownKid { events.keySet.requestEarlyRefresh(now: clock.monotonicNanoseconds()) }
            throw TokenGateError(.unauthenticated, "the push's OIDC token failed verification (\(error.reason))")
        }
        guard case .string(let issuer)? = verified.claims["iss"], Self.googleIssuers.contains(issuer) else {
            throw TokenGateError(.unauthenticated, "the push's OIDC token was not issued by Google")
        }
        guard verified.claims["email"]?.stringValue == events.settings.serviceAccount else {
            throw TokenGateError(.unauthenticated, "the push's OIDC token is not for \(events.settings.serviceAccount)")
        }
        guard verified.claims["email_verified"] == .bool(true) else {
            throw TokenGateError(.unauthenticated, "the push's OIDC token does not say its email is verified")
        }
    }

    /// The two spellings of Google's issuer in its ID tokens.
    static let googleIssuers: Set<String> = ["https://accounts.google.com", "accounts.google.com"]

    /// Reads a verified push's body (a Pub/Sub push envelope, or nil when it was too large to read) and ends what it
    /// finishes. Never fails: whatever it holds is acknowledged.
    package func receive(_ push: VerifiedPush, body: [UInt8]?) async -> Receipt {
        let receipt = await handle(push, body: body)
        let generation = service.generation
        generation.metrics.recordFleetEvent(push.provider, outcome: receipt.outcome.rawValue)
        service.logger.log(
            level: receipt.outcome == .malformed || receipt.outcome == .full ? .warning : .info, "fleet event push",
            metadata: [
                "provider": "\(push.provider)", "outcome": "\(receipt.outcome.rawValue)",
                "contexts": "\(receipt.changed.map { "\($0.type)/\($0.id)" }.joined(separator: ","))",
                "reason": "\(receipt.reason ?? "")",
            ])
        return receipt
    }

    private func handle(_ push: VerifiedPush, body: [UInt8]?) async -> Receipt {
        guard let body else { return Receipt(outcome: .malformed, changed: [], reason: "the body is over \(Self.maxBodyBytes) bytes") }
        guard case .object(let envelope)? = try? JSON.parse(body), case .object(let message)? = envelope["message"],
            case .string(let data)? = message["data"], let decoded = Data(base64Encoded: data)
        else {
            return Receipt(outcome: .malformed, changed: [], reason: "not a Pub/Sub push: no message.data in base64")
        }
        let messageID = message["messageId"]?.stringValue ?? "unknown"
        let entry: FleetEngineLogEntry
        let loggedAt: Int64?
        do {
            (entry, loggedAt) = try FleetEngineLogEntry.read([UInt8](decoded))
        } catch {
            return Receipt(outcome: .malformed, changed: [], reason: error.description)
        }
        let (project, ends, lifts) = Self.changes(entry, settings: push.settings)
        if case .unrelated(let type) = entry { return Receipt(outcome: .ignored, changed: [], reason: "a \(type) entry") }
        guard project == push.provider.rawValue else {
            return Receipt(outcome: .ignored, changed: [], reason: "an entry of project \(Sanitized.quote(project)), not \(push.provider)")
        }
        let contexts = service.contexts
        let now = service.clock.wallSeconds()
        let actor = "fleet event (Pub/Sub message \(messageID.prefix(64)))"
        // The entry's own time orders it against other events of the same entity, whatever order Pub/Sub delivers
        // them in; an entry without one ends (as the oldest event) but lifts nothing.
        let origin = EndedContexts.Origin.event(at: loggedAt ?? 0)
        var ended: [(type: TokenType, id: ContextID)] = []
        var duplicates = 0
        for (type, id) in ends {
            guard let key = EndedContexts.Key(provider: push.provider, tokenType: type, id: id) else { continue }
            if contexts.endedContexts.record(key, now: now) != nil {
                duplicates += 1
                continue
            }
            do {
                _ = try await contexts.end(key, origin: origin, by: actor)
            } catch {
                return Receipt(outcome: .full, changed: ended, reason: error.reason)
            }
            ended.append((type, id))
        }
        var lifted: [(type: TokenType, id: ContextID)] = []
        var kept: [String] = []
        for (type, id) in lifts {
            guard let key = EndedContexts.Key(provider: push.provider, tokenType: type, id: id) else { continue }
            guard loggedAt != nil else {
                kept.append("the entry has no timestamp to order it after the end")
                continue
            }
            switch await contexts.lift(key, origin: origin, by: actor) {
            case .lifted: lifted.append((type, id))
            case .kept(let record):
                kept.append(record.origin == .operator ? "ended by an operator" : "ended by a newer event")
            case .notEnded: continue
            }
        }
        if !ended.isEmpty { return Receipt(outcome: .ended, changed: ended, reason: nil) }
        if !lifted.isEmpty { return Receipt(outcome: .lifted, changed: lifted, reason: nil) }
        if !kept.isEmpty { return Receipt(outcome: .kept, changed: [], reason: "not lifted: \(kept.joined(separator: "; "))") }
        if duplicates > 0 { return Receipt(outcome: .duplicate, changed: [], reason: "already ended") }
        return Receipt(outcome: .ignored, changed: [], reason: "no state that ends a context")
    }

    /// The project an entry is about, and the contexts it ends and lifts under `settings`. An entity created (again,
    /// with an ID an older event ended: after a deletion, say) lifts that end, unless the same entry ends it.
    static func changes(
        _ entry: FleetEngineLogEntry, settings: FleetEventSettings
    ) -> (project: String, ends: [(TokenType, ContextID)], lifts: [(TokenType, ContextID)]) {
        switch entry {
        case .unrelated:
            return ("", [], [])
        case .trip(let project, let id, let status, let created):
            let ends = settings.tripStatuses.contains { $0 != .deleted && status.hasSuffix("_" + $0.rawValue.uppercased()) }
            return (project, ends ? [(.consumer, id)] : [], created && !ends ? [(.consumer, id)] : [])
        case .vehicle(let project, let id, let state, let created):
            let offline = settings.vehicleEnds.contains(.offline)
            if offline, state.hasSuffix("_OFFLINE") { return (project, [(.driver, id)], []) }
            // Back online lifts an end that going offline made.
            if created || (offline && state.hasSuffix("_ONLINE")) { return (project, [], [(.driver, id)]) }
            return (project, [], [])
        case .task(let project, let id, let state, let outcome, let type, let trackingID, let created):
            let ends = settings.taskEnds.contains { end in
                switch end {
                case .closed: state?.hasSuffix("_CLOSED") == true
                case .succeeded: outcome?.hasSuffix("_SUCCEEDED") == true
                case .failed: outcome?.hasSuffix("_FAILED") == true
                case .deleted: false
                }
            }
            guard ends else { return (project, [], created ? [(.deliveryConsumer, id)] : []) }
            // A shipment's tracking ID spans its pickup and delivery tasks: only the delivery finishes it.
            let tracking = type?.hasSuffix("_DELIVERY") == true ? trackingID.map { [(TokenType.deliveryConsumer, $0)] } ?? [] : []
            return (project, [(.deliveryConsumer, id)] + tracking, [])
        case .deliveryVehicle(let project, let id, let created):
            // Fleet Engine's delivery vehicles have no state that ends them: only a deletion does.
            return (project, [], created ? [(.deliveryDriver, id)] : [])
        case .deleted(let project, let kind, let id):
            // The log of a deletion names the entity alone: a deleted task's shipment (its tracking ID) is not in it.
            let ended: TokenType? =
                switch kind {
                case .trip: settings.tripStatuses.contains(.deleted) ? .consumer : nil
                case .vehicle: settings.vehicleEnds.contains(.deleted) ? .driver : nil
                case .task: settings.taskEnds.contains(.deleted) ? .deliveryConsumer : nil
                case .deliveryVehicle: settings.deliveryVehicleEnds.contains(.deleted) ? .deliveryDriver : nil
                }
            return (project, ended.map { [($0, id)] } ?? [], [])
        }
    }
}

/// A provider's fleet-event settings and the key set its pushes' tokens are checked with.
struct ProviderEvents: Sendable {
    let settings: FleetEventSettings
    let keySet: RemoteKeySet
}

/// Refused pushes, logged in aggregate so a flood cannot flood the log: the first refusal of each provider (and of
/// paths naming none) in an interval is logged with its reason; the ones after it are counted, and the count is logged
/// with the next line of that kind.
final class RefusalTally: Sendable {
    static let interval: Int64 = 10
    private let clock: TokenGateClock
    private let logger: Logger
    private let state = Mutex<[String: (loggedAt: Int64, unlogged: Int)]>([:])

    init(clock: TokenGateClock, logger: Logger) {
        self.clock = clock
        self.logger = logger
    }

    func record(provider: ProviderID?, reason: String) {
        let key = provider?.rawValue ?? ""
        let now = clock.wallSeconds()
        let due: Int? = state.withLock { state in
            if let last = state[key], now - last.loggedAt < Self.interval {
                state[key]?.unlogged += 1
                return nil
            }
            defer { state[key] = (now, 0) }
            return state[key]?.unlogged ?? 0
        }
        guard let due else { return }
        var metadata: Logger.Metadata = ["provider": "\(provider.map { "\($0)" } ?? "(none)")", "reason": "\(reason)"]
        if due > 0 { metadata["refused_since_last_line"] = "\(due)" }
        logger.warning("fleet event push refused", metadata: metadata)
    }
}
