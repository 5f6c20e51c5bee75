import JOSE
import OpenSSLPrimitives
import Synchronization

/// One provider's callers: turns an `Authorization` header into an ``AuthenticatedCaller`` and decides what that
/// caller may have. There is no anonymous path: a request without a credential this provider knows is refused.
///
/// API keys are hashed once and compared, in constant time, against every api-key client's digest. Session JWTs
/// go to the jwt clients whose `issuer` matches, are verified with their JWKS, and are then remembered until they
/// expire, so a repeat call costs no signature check.
///
/// A `jwksUrl` client verifies with the generation's shared ``RemoteKeySet`` for that URL: no set yet means 401
/// ("identity provider keys not loaded yet"); a token naming a `kid` the set lacks is refused now and asks the key
/// set's refresher for an early fetch (non-blocking, rate-limited), so later tokens signed with a rotated key pass
/// once it arrives.
///
/// Immutable after init except for the session memo, a bounded table behind a `Mutex` (no actor on the request
/// path). A reload that leaves a provider's clients unchanged hands its authenticator, memo and all, to the next
/// generation.
///
/// ```swift
/// let authenticator = CallerAuthenticator(provider: settings.id, clients: settings.clients, clock: .system) { url in
///     directory.keySet(for: url)
/// }
/// let caller = try authenticator.authenticate(CallerCredential(authorization: request.headers[.authorization]))
/// try authenticator.authorize(caller, for: .trip(tripID))
/// ```
package final class CallerAuthenticator: Sendable {
    struct APIKeyClient: Sendable {
        let client: ClientConfig
        let digest: [UInt8]
    }

    struct SessionClient: Sendable {
        enum Keys: Sendable {
            case fixed(JWKSet)
            case remote(RemoteKeySet)
        }

        let client: ClientConfig
        let issuer: String
        let keys: Keys
        let policy: ValidationPolicy
        let requiredForReadiness: Bool

        /// The keys to verify with now: the file's, or the URL's latest good set (nil until a fetch succeeded).
        var currentKeys: JWKSet? {
            switch keys {
            case .fixed(let set): set
            case .remote(let remote): remote.current()
            }
        }
    }

    /// The provider these callers belong to.
    package let provider: ProviderID
    let apiKeyClients: [APIKeyClient]
    let sessionClients: [SessionClient]
    /// The clients with an `authorizer:`: for them a session-token caller's `any` grant defers to the authorizer.
    let clientsWithAuthorizer: Set<String>
    let clock: TokenGateClock
    let memo: Mutex<SessionMemo>
    // Counts signature verifications of session tokens, so tests can prove a memo hit does none.
    private let verifications = Atomic<Int>(0)

    /// Creates the authenticator of `provider`'s `clients`; `keySet` gives the shared key set of a `jwksUrl:`.
    /// `sessionMemoLimit` bounds how many verified session tokens are remembered (least recently used go first); 0
    /// turns the memo off.
    package init(
        provider: ProviderID,
        clients: [ClientConfig],
        clock: TokenGateClock,
        keySet: (JWKSURL) -> RemoteKeySet,
        sessionMemoLimit: Int = 100_000
    ) {
        self.provider = provider
        self.clock = clock
        var apiKeyClients: [APIKeyClient] = []
        var sessionClients: [SessionClient] = []
        for client in clients {
            switch client.credential {
            case .apiKey(let digest):
                apiKeyClients.append(APIKeyClient(client: client, digest: digest))
            case .jwt(let settings):
                // Without an audience any token of the identity provider would do, for any of its apps: such a
                // client (the parser refuses it) fails closed and authenticates nobody.
                guard !settings.audiences.isEmpty else { continue }
                let keys: SessionClient.Keys =
                    switch settings.keySource {
                    case .fixed(let set): .fixed(set)
                    case .url(let url): .remote(keySet(url))
                    }
                sessionClients.append(
                    SessionClient(
                        client: client, issuer: settings.issuer, keys: keys, policy: Self.policy(for: settings),
                        requiredForReadiness: settings.requiredForReadiness))
            }
        }
        self.apiKeyClients = apiKeyClients
        self.sessionClients = sessionClients
        self.clientsWithAuthorizer = Set(clients.filter { $0.authorizer != nil }.map(\.name))
        self.memo = Mutex(SessionMemo(limit: sessionMemoLimit))
    }

    /// The caller behind a credential already read from its header. `beforeSignatureCheck` runs only when the
    /// answer costs a signature verification (a session token not remembered, from a trusted issuer), and may
    /// refuse the request before it is spent.
    package func authenticate(
        _ credential: CallerCredential, beforeSignatureCheck: () throws(TokenGateError) -> Void = {}
    ) throws(TokenGateError) -> AuthenticatedCaller {
        switch credential {
        case .apiKey(let digest): try authenticateAPIKey(digest: digest)
        case .sessionToken(let token): try authenticateSessionToken(token, beforeSignatureCheck: beforeSignatureCheck)
        }
    }

    /// Whether `caller` may have a token for `context`; throws `forbidden`, with a reason naming the token type
    /// or claim (and the requested ID, never the caller's claim values), when not.
    ///
    /// API-key callers get a type when `allow` grants it `any`. Session-token callers get a context only when each
    /// of its IDs (a batch's every task) is one of the values of the claim their grant names (exact,
    /// case-sensitive). A whole-fleet type needs its own `whole-fleet` grant, and a server token is never an app
    /// user's, whatever the configuration says; a trusted driver's every-task token needs `allowAllTasks`.
    /// A session-token caller whose client has an authorizer may also hold `any` (not for a whole-fleet type): the
    /// authorizer then decides, after this.
    package func authorize(_ caller: AuthenticatedCaller, for context: TokenContext) throws(TokenGateError) {
        guard caller.provider == provider else {
            throw TokenGateError(.forbidden, "\(caller) is not a caller of \(provider)")
        }
        let type = context.tokenType
        guard let grant = caller.grants[type] else {
            throw TokenGateError(.forbidden, "client \(caller.name) may not have \(type) tokens")
        }
        if case .trustedDeliveryVehicle(_, .all) = context, !caller.allowsAllTasks {
            throw TokenGateError(.forbidden, "client \(caller.name) may not have a token for every task (allowAllTasks)")
        }
        switch (caller.kind, grant) {
        case (.apiKey, .anyContext) where !type.isWholeFleet:
            return
        case (.apiKey, .wholeFleet) where type.isWholeFleet, (.sessionToken, .wholeFleet) where type.isWholeFleet && type != .server:
            return
        case (.sessionToken, .claim(let claim)) where !type.isWholeFleet:
            let listed = caller.claimValues[claim] ?? []
            guard context.grantedIDs.allSatisfy({ listed.contains($0.rawValue) }) else {
                throw TokenGateError(
                    .forbidden, "\(context) is not listed in claim '\(claim)' of client \(caller.name)'s session token")
            }
        case (.sessionToken, .anyContext) where !type.isWholeFleet && clientsWithAuthorizer.contains(caller.name):
            return
        default:
            // Only a grant built by hand gets here: the configuration parser refuses these combinations.
            throw TokenGateError(.forbidden, "client \(caller.name) has an unusable grant for \(type) tokens")
        }
    }

    /// The shared key sets of every `jwksUrl:` client.
    var remoteKeySets: [RemoteKeySet] {
        sessionClients.compactMap { client in
            guard case .remote(let set) = client.keys else { return nil }
            return set
        }
    }

    /// The shared key sets of the `jwksUrl:` clients marked `requiredForReadiness`.
    var keySetsRequiredForReadiness: [RemoteKeySet] {
        sessionClients.compactMap { client in
            guard client.requiredForReadiness, case .remote(let set) = client.keys else { return nil }
            return set
        }
    }

    /// How many session tokens are remembered now.
    var sessionMemoCount: Int { memo.withLock { $0.count } }

    /// How many signature verifications session tokens have cost so far.
    var sessionVerificationCount: Int { verifications.load(ordering: .relaxed) }

    private func authenticateAPIKey(digest: [UInt8]) throws(TokenGateError) -> AuthenticatedCaller {
        var match: APIKeyClient?
        for candidate in apiKeyClients {
            // Every digest is compared and a match does not end the loop, so timing tells neither whether nor
            // which client matched.
            let isMatch = ConstantTime.isEqual(digest, candidate.digest)
            if isMatch, match == nil { match = candidate }
        }
        guard let match else { throw TokenGateError(.unauthenticated, "unknown API key") }
        guard !match.client.isRevoked else {
            throw TokenGateError(.unauthenticated, "revoked client \(match.client.name)")
        }
        return AuthenticatedCaller(
            provider: provider, name: match.client.name, kind: .apiKey, grants: match.client.allow, allowsAllTasks: match.client.allowsAllTasks)
    }

    private func authenticateSessionToken(
        _ token: String, beforeSignatureCheck: () throws(TokenGateError) -> Void
    ) throws(TokenGateError) -> AuthenticatedCaller {
        let digest = try Self.sha256(token)
        let now = clock.wallSeconds()
        if let caller = memo.withLock({ $0.caller(for: digest, now: now) }) { return caller }
        guard case .string(let issuer)? = JWTVerifier.decodeUnverified(token).claims?["iss"] else {
            throw TokenGateError(.unauthenticated, "session token without a readable string iss")
        }
        // The unverified iss only picks whose keys to try; the verifier then checks it, with the signature.
        let candidates = sessionClients.filter { $0.issuer == issuer }
        guard !candidates.isEmpty else {
            throw TokenGateError(.unauthenticated, "session token from an issuer no jwt client of \(provider) trusts")
        }
        try beforeSignatureCheck()
        var failures: [String] = []
        var revoked: String?
        for candidate in candidates {
            guard let keys = candidate.currentKeys else {
                failures.append("\(candidate.client.name): identity provider keys not loaded yet")
                continue
            }
            verifications.add(1, ordering: .relaxed)
            let verified: VerifiedJWT
            do {
                verified = try JWTVerifier(keys: keys).verify(token, policy: candidate.policy, now: now)
            } catch {
                if error.reason == .unknownKid, case .remote(let remote) = candidate.keys {
                    // The identity provider may have rotated its keys: fetch soon, but never make this caller wait.
                    remote.requestEarlyRefresh(now: clock.monotonicNanoseconds())
                }
                failures.append("\(candidate.client.name): \(error.reason)")
                continue
            }
            guard !candidate.client.isRevoked else {
                revoked = revoked ?? candidate.client.name
                continue
            }
            let caller = makeSessionCaller(candidate.client, claims: verified.claims)
            if let expiresAt = verified.expiresAt {
                let validUntil = expiresAt.addingReportingOverflow(max(candidate.policy.leeway, 0))
                memo.withLock {
                    $0.remember(caller, for: digest, validUntil: validUntil.overflow ? .max : validUntil.partialValue)
                }
            }
            return caller
        }
        if let revoked { throw TokenGateError(.unauthenticated, "revoked client \(revoked)") }
        throw TokenGateError(.unauthenticated, "session token rejected (\(failures.joined(separator: "; ")))")
    }

    private func makeSessionCaller(_ client: ClientConfig, claims: JSONObject) -> AuthenticatedCaller {
        var values: [String: Set<String>] = [:]
        for case .claim(let name) in client.allow.values {
            switch claims[name] {
            case .string(let value)?:
                values[name] = [value]
            case .array(let elements)?:
                let strings = elements.compactMap(\.stringValue)
                // A mixed array is not what the policy asked for: it grants nothing rather than a guess.
                if strings.count == elements.count { values[name] = Set(strings) }
            default:
                break
            }
        }
        return AuthenticatedCaller(
            provider: provider, name: client.name, kind: .sessionToken, subject: claims["sub"]?.stringValue,
            grants: client.allow, claimValues: values, allowsAllTasks: client.allowsAllTasks)
    }

    static func policy(for settings: SessionTokenSettings) -> ValidationPolicy {
        var policy = ValidationPolicy()
        policy.maxTokenBytes = BearerCredential.maxBytes
        // Identity providers sign with public keys; an HMAC session token is refused outright, whatever the JWKS.
        policy.allowedAlgorithms = Set(JWSAlgorithm.allCases.filter { !$0.isSymmetric })
        policy.leeway = settings.leeway
        policy.requireExpiration = true
        policy.issuer = settings.issuer
        policy.audiences = settings.audiences
        return policy
    }

    static func sha256(_ credential: String) throws(TokenGateError) -> [UInt8] {
        do {
            var credential = credential
            return try credential.withUTF8 { try Digest.sha256(UnsafeRawBufferPointer($0)) }
        } catch {
            throw TokenGateError(.internalError, "SHA-256 failed: \(error)")
        }
    }
}
