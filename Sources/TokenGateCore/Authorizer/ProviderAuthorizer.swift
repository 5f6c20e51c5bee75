import JOSE

/// One provider's live ownership checks: for a client with an `authorizer:`, asks the tenant's own backend whether
/// the caller may have the context, after authentication and `allow` and before the rate limits and the token cache.
///
/// Fails closed: only `200 {"allowed": true}` lets a request on (with `"until": <epoch seconds>`, a token no later
/// than that); a no is `forbidden`, and anything that is not a clear
/// yes or no is `authorizer_unavailable`, never an allow and never cached. Yes and no are cached per (client, subject,
/// context) for the client's `cacheFor` in an ``AuthorizerDecisionCache``; concurrent identical questions share one
/// call. The subject is the session token's `sub` (a session token without one is refused without a call), or the
/// client's name for an api-key client.
///
/// Built by the ``GatewayAssembler`` with the provider's runtime; a reload that leaves the provider's clients
/// unchanged hands its cached answers to the next generation's, as it hands on the ``CallerAuthenticator``.
final class ProviderAuthorizer: Sendable {
    let provider: ProviderID
    private let clients: [String: AuthorizerSettings]
    private let transport: any AuthorizerTransport
    private let metrics: ProviderMetrics
    /// The answers so far: handed on by a reload that keeps the clients.
    let answers: AuthorizerDecisionCache
    /// Contains the calls: a cap on calls in flight and a circuit breaker, handed on with the answers.
    let callGuard: CallGuard

    /// The authorizers of `clients` that have one, asked through `transport`, remembering answers in `answers`.
    init(
        provider: ProviderID, clients: [ClientConfig], transport: any AuthorizerTransport, metrics: ProviderMetrics,
        answers: AuthorizerDecisionCache, guard callGuard: CallGuard
    ) {
        self.callGuard = callGuard
        self.provider = provider
        var byName: [String: AuthorizerSettings] = [:]
        for client in clients { byName[client.name] = client.authorizer }
        self.clients = byName
        self.transport = transport
        self.metrics = metrics
        self.answers = answers
    }

    /// Whether ``check(_:for:)`` asks (or looks up) anything for `caller`: its client has an authorizer.
    func asks(_ caller: AuthenticatedCaller) -> Bool { settings(of: caller) != nil }

    private func settings(of caller: AuthenticatedCaller) -> AuthorizerSettings? {
        clients.isEmpty ? nil : clients[caller.name]
    }

    /// Returns when `caller`'s client has no authorizer or its authorizer allows `context`: the latest `exp` its yes
    /// allows (its `until`), or nil for no bound. Throws `forbidden` when it denies, `authorizer_unavailable` when it
    /// gives no clear answer. The reason (status, timeout) is for the log.
    @discardableResult
    func check(_ caller: AuthenticatedCaller, for context: TokenContext) async throws(TokenGateError) -> Int64? {
        guard let settings = settings(of: caller) else { return nil }
        let subject: String
        switch caller.kind {
        case .apiKey, .gateway:
            subject = caller.name
        case .sessionToken:
            // Without a subject the answer could only be about the client, shared by all its users: refused.
            guard let sub = caller.subject, !sub.isEmpty else {
                throw TokenGateError(.forbidden, "client \(caller.name)'s session token has no non-empty string sub for its authorizer")
            }
            subject = sub
        }
        guard let url = settings.url.url(subject: subject, client: caller.name, provider: provider, context: context) else {
            throw TokenGateError(.forbidden, "a value for the authorizer URL's path of client \(caller.name) is only dots")
        }
        let key = AuthorizerDecisionCache.Key(client: caller.name, subject: subject, context: context)
        let request = AuthorizerRequest(url: url, timeout: settings.timeout)
        let (transport, metrics, callGuard) = (self.transport, self.metrics, self.callGuard)
        let (verdict, source) = await answers.verdict(for: key, cacheFor: settings.cacheFor) {
            do {
                return try await callGuard.run(
                    {
                        let verdict = await Self.ask(transport, request)
                        metrics.recordAuthorizerCall(verdict.outcome)
                        return verdict
                    }, failed: { if case .unavailable = $0 { true } else { false } })
            } catch {
                // Refused by the guard (open circuit, no slot in time) or cancelled: no answer, never cached.
                return .unavailable(why: (error as? TokenGateError)?.reason ?? "\(type(of: error))")
            }
        }
        if source == .cache { metrics.recordAuthorizerCacheHit() }
        switch verdict {
        case .allowed(let until):
            return until
        case .denied(let why):
            throw TokenGateError(.forbidden, "the authorizer of client \(caller.name) denied \(context) (\(why))")
        case .unavailable(let why):
            throw TokenGateError(.authorizerUnavailable, "the authorizer of client \(caller.name) gave no answer for \(context): \(why)")
        }
    }

    /// One exchange under the request's deadline, whatever the transport does, and its reading by the contract.
    static func ask(_ transport: any AuthorizerTransport, _ request: AuthorizerRequest) async -> AuthorizerVerdict {
        let answer = await withTaskGroup(of: Result<AuthorizerResponse, any Error>?.self) { group in
            group.addTask {
                do { return .success(try await transport.send(request)) } catch { return .failure(error) }
            }
            group.addTask {
                try? await Task.sleep(for: request.timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        switch answer {
        case nil:
            return .unavailable(why: "no answer within \(request.timeout)")
        case .failure(let error)?:
            return .unavailable(why: (error as? AuthorizerTransportFailure)?.description ?? "\(type(of: error))")
        case .success(let response)?:
            return read(response, maxBodyBytes: request.maxBodyBytes)
        }
    }

    /// The answer contract: 200 `{"allowed": true}` yes, bounded by `"until"` (integer epoch seconds) when given;
    /// 200 `{"allowed": false}`, 403 or 404 no; anything else no answer (a yes with an `until` that is not a
    /// positive integer too: a bound misread must not become a longer token).
    static func read(_ response: AuthorizerResponse, maxBodyBytes: Int) -> AuthorizerVerdict {
        switch response.status {
        case 200:
            guard response.body.count <= maxBodyBytes else {
                return .unavailable(why: "answered 200 with a body over \(maxBodyBytes) bytes")
            }
            guard case .object(let object)? = try? JSON.parse(response.body), case .bool(let allowed)? = object["allowed"] else {
                return .unavailable(why: #"answered 200 without a JSON body {"allowed": true|false}"#)
            }
            guard allowed else { return .denied(why: #"answered {"allowed": false}"#) }
            switch object["until"] {
            case nil, .null?:
                return .allowed(until: nil)
            case .integer(let until)? where until > 0:
                return .allowed(until: until)
            default:
                return .unavailable(why: #"answered {"allowed": true} with an "until" that is not positive integer epoch seconds"#)
            }
        case 403, 404:
            return .denied(why: "answered HTTP \(response.status)")
        default:
            return .unavailable(why: "answered HTTP \(response.status)")
        }
    }
}

/// A transport failure whose description is safe for the log (no URL: it names the caller's subject). Transports
/// throw it; any other error is logged by its type only.
package struct AuthorizerTransportFailure: Error, Sendable, CustomStringConvertible {
    package let description: String

    /// A failure described by `description`.
    package init(_ description: String) { self.description = description }
}
