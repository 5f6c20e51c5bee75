public import Foundation
import JOSE
import Logging
import ServiceLifecycle
import Synchronization
public import TokenGateCore

/// The contract every backend plugin meets, checked on a real instance built from configuration by the plugin's
/// own factory: what the gateway relies on without looking inside a backend. A plugin's tests (ours, or a third
/// party's in its own package) run it and expect no violation:
///
/// ```swift
/// let violations = await BackendConformance(factory: MyFactory(), section: "type: my-backend\n…").violations()
/// #expect(violations == [])
/// ```
///
/// Checked: the types it declares are stored and not empty; for each type, a token issued for a context verifies
/// with the backend's own verification keys exactly as the gateway verifies it (RS256, key bound to its service
/// account, audience, scope) and for no other context; what the backend says of the token (`kid`, `exp`, issuer,
/// lifetime) agrees with the token; a minting backend honours a request's `notAfter`; a cancelled `issue` and
/// cancelled background work end; a failing backend throws a `backend_*` error; a bad section is refused naming
/// its key; nothing it says (summary, readiness) carries a key or a token.
public struct BackendConformance: Sendable {
    /// What builds the backend.
    public var factory: any TokenBackendFactory
    /// The provider's `backend:` section as YAML (a mapping with `type:`); files it names resolve against
    /// ``directory``.
    public var section: String
    /// The folder config.yaml would be in.
    public var directory: String
    /// What `${VAR}` references in the section read.
    public var environment: [String: String]
    /// Fetches the keys of a backend whose verification keys are at a URL (nil: such a backend is a violation).
    public var jwksFetcher: (any JWKSFetcher)?
    /// A section that loads, but whose backend cannot issue (its server is down): `issue` must throw `backend_*`.
    public var failingSection: String?
    /// A section the factory must refuse, and the key its error must name.
    public var invalidSection: (yaml: String, key: String)?
    /// The provider the backend is built for.
    public var provider: ProviderID
    /// The `aud` its tokens must carry.
    public var audience: String
    /// Wall time for issuing and verifying.
    public var clock: TokenGateClock
    /// How long a cancelled `issue` or background work may take to end.
    public var endWithin: Duration

    /// Creates the check of the backend `factory` builds from `section`.
    public init(
        factory: any TokenBackendFactory, section: String, directory: String = FileManager.default.currentDirectoryPath,
        environment: [String: String] = [:], jwksFetcher: (any JWKSFetcher)? = nil, failingSection: String? = nil,
        invalidSection: (yaml: String, key: String)? = nil, provider: ProviderID = ProviderID("conformance-project")!,
        audience: String = FleetEngineClaims.defaultAudience, clock: TokenGateClock = .system, endWithin: Duration = .seconds(5)
    ) {
        self.factory = factory
        self.section = section
        self.directory = directory
        self.environment = environment
        self.jwksFetcher = jwksFetcher
        self.failingSection = failingSection
        self.invalidSection = invalidSection
        self.provider = provider
        self.audience = audience
        self.clock = clock
        self.endWithin = endWithin
    }

    /// Every way the backend breaks the contract, one sentence each; empty when it meets it.
    public func violations() async -> [String] {
        var found: [String] = []
        let backend: any TokenBackend
        do {
            backend = try await build(section)
        } catch {
            return ["the section did not load: \(error)"]
        }
        found += Self.declaredTypes(of: backend)
        let keys: VerificationKeys
        do {
            keys = try await verificationKeys(of: backend)
        } catch {
            return found + ["its verification keys could not be read: \(error)"]
        }
        for type in backend.tokenTypes.sorted(by: { $0.rawValue < $1.rawValue }) {
            found += await issuing(type, from: backend, keys: keys)
        }
        found += await honoursNotAfter(backend, keys: keys)
        found += await endsWhenCancelled(backend)
        found += await failsWithBackendCode()
        found += await refusesInvalidSection()
        found += Self.saysNoSecret(backend)
        return found
    }

    // MARK: The checks

    private static func declaredTypes(of backend: any TokenBackend) -> [String] {
        var found: [String] = []
        if backend.tokenTypes.isEmpty { found.append("tokenTypes is empty: the backend can issue nothing") }
        if backend.tokenTypes != backend.tokenTypes { found.append("tokenTypes changes between reads: keep it stored") }
        if let lifetimes = backend.tokenLifetimes {
            for type in backend.tokenTypes where lifetimes.seconds(for: type) > FleetEngineClaims.maxLifetime {
                found.append("tokenLifetimes gives \(type) tokens \(lifetimes.seconds(for: type)) s, over Fleet Engine's hour")
            }
        }
        return found
    }

    /// Issues a token of `type` and checks it as the gateway would, and what the backend said of it.
    private func issuing(_ type: TokenType, from backend: any TokenBackend, keys: VerificationKeys) async -> [String] {
        let context = Self.context(of: type, number: 1)
        let token: IssuedToken
        do {
            token = try await backend.issue(TokenRequest(provider: provider, context: context))
        } catch {
            return ["issuing a \(type) token for \(context) failed: \(error)"]
        }
        let verifier = FleetEngineVerifier(keys: keys, audience: audience)
        let now = clock.wallSeconds()
        let verified: VerifiedJWT
        do {
            verified = try verifier.verify(token.compact, for: context, now: now)
        } catch {
            return ["its \(type) token for \(context) does not verify with its own keys: \(error)"]
        }
        var found: [String] = []
        let other = Self.context(of: type, number: 2)
        if other != context, (try? verifier.verify(token.compact, for: other, now: now)) != nil {
            found.append("its \(type) token for \(context) also verifies for \(other)")
        }
        if let keyID = token.keyID, keyID != verified.keyID {
            found.append("it says its \(type) token was signed with '\(keyID)'; the header names \(verified.keyID.map { "'\($0)'" } ?? "no key")")
        }
        if let issuer = token.issuer, verified.claims["iss"] != .string(issuer) {
            found.append("it says its \(type) token's issuer is \(issuer); the token's iss differs")
        }
        if let stated = token.expiresAt, let exp = verified.expiresAt, abs(stated - exp) > verifier.leeway {
            found.append("it says its \(type) token expires at \(stated); its exp is \(exp)")
        }
        if let lifetimes = backend.tokenLifetimes, let exp = verified.expiresAt, let iat = verified.issuedAt,
            exp - iat != lifetimes.seconds(for: type)
        {
            found.append("its \(type) token lives \(exp - iat) s; tokenLifetimes says \(lifetimes.seconds(for: type)) s")
        }
        return found
    }

    /// A backend that mints (it states its lifetimes) cuts a token at the request's `notAfter`.
    private func honoursNotAfter(_ backend: any TokenBackend, keys: VerificationKeys) async -> [String] {
        guard backend.tokenLifetimes != nil, let type = backend.tokenTypes.min(by: { $0.rawValue < $1.rawValue }) else { return [] }
        let notAfter = clock.wallSeconds() + 120
        let context = Self.context(of: type, number: 3)
        do {
            let token = try await backend.issue(TokenRequest(provider: provider, context: context, notAfter: notAfter))
            let verified = try FleetEngineVerifier(keys: keys, audience: audience).verify(token.compact, for: context, now: clock.wallSeconds())
            guard let exp = verified.expiresAt, exp <= notAfter else {
                return ["a \(type) token asked for with notAfter \(notAfter) expires at \(verified.expiresAt.map(String.init) ?? "no time")"]
            }
            return []
        } catch {
            return ["issuing a \(type) token with notAfter failed: \(error)"]
        }
    }

    /// A cancelled `issue` and cancelled background work end within ``endWithin``: a reload cancels them.
    private func endsWhenCancelled(_ backend: any TokenBackend) async -> [String] {
        var found: [String] = []
        if let type = backend.tokenTypes.min(by: { $0.rawValue < $1.rawValue }) {
            let request = TokenRequest(provider: provider, context: Self.context(of: type, number: 4))
            let outcome = Mutex<(any Error)?>(nil)
            let issuing = Task {
                do { _ = try await backend.issue(request) } catch { outcome.withLock { $0 = error } }
            }
            issuing.cancel()
            if await !Self.ends(issuing, within: endWithin) {
                found.append("a cancelled issue() was still running after \(endWithin)")
            } else if let error = outcome.withLock({ $0 }), !(error is CancellationError), !(error is TokenGateError) {
                found.append("a cancelled issue() threw \(Swift.type(of: error)), neither CancellationError nor TokenGateError")
            }
        }
        if let work = backend.backgroundWork {
            let running = Task { _ = try? await work.run() }
            try? await Task.sleep(for: .milliseconds(100))
            running.cancel()
            if await !Self.ends(running, within: endWithin) {
                found.append("its background work was still running \(endWithin) after its task was cancelled")
            }
        }
        return found
    }

    /// A backend that cannot reach what it issues from says so with a `backend_*` code, which callers see as 503/504.
    private func failsWithBackendCode() async -> [String] {
        guard let failingSection else { return [] }
        do {
            let backend = try await build(failingSection)
            guard let type = backend.tokenTypes.min(by: { $0.rawValue < $1.rawValue }) else { return [] }
            _ = try await backend.issue(TokenRequest(provider: provider, context: Self.context(of: type, number: 5)))
            return ["the failing section's backend issued a token"]
        } catch let error as TokenGateError where error.code.rawValue.hasPrefix("backend_") {
            return []
        } catch {
            return ["the failing section's backend threw \(error), not a TokenGateError with a backend_* code"]
        }
    }

    /// Every configuration error surfaces at load, naming its key and line.
    private func refusesInvalidSection() async -> [String] {
        guard let (yaml, key) = invalidSection else { return [] }
        do {
            _ = try await build(yaml)
            return ["the invalid section loaded"]
        } catch let error as ConfigError {
            guard error.keyPath.hasSuffix(key), error.mark != nil else {
                return ["the invalid section was refused at '\(error.keyPath)' (at \(error.mark.map { "\($0)" } ?? "no line")), not at \(key)"]
            }
            return []
        } catch {
            return ["the invalid section threw \(error), not a ConfigError naming file, line and key"]
        }
    }

    /// Operators read the summary and readiness in `check-config` and `/readyz`: no key and no token in them.
    private static func saysNoSecret(_ backend: any TokenBackend) -> [String] {
        let readiness = backend.readiness
        let said = [backend.summary] + readiness.notReady + readiness.degraded
        let leaks = said.filter { $0.contains("PRIVATE KEY") || containsCompactJWS($0) }
        return leaks.map { "it says a secret (summary or readiness): \($0.prefix(24))…" }
    }

    /// Whether `text` holds something shaped like a signed token: three base64url parts, the first a JSON object.
    static func containsCompactJWS(_ text: String) -> Bool {
        let base64URL = Set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.")
        return text.split(whereSeparator: { !base64URL.contains($0) }).contains { word in
            word.hasPrefix("eyJ") && word.split(separator: ".", omittingEmptySubsequences: false).count == 3
        }
    }

    // MARK: Helpers

    private func build(_ yaml: String) async throws -> any TokenBackend {
        let file = ConfigFile(path: "\(directory)/config.yaml", environment: environment)
        let section = try ConfigNode.parse(Array(yaml.utf8), file: file)
        let context = BackendContext(
            provider: provider, section: section, audience: audience, clock: clock, logger: Logger(label: "conformance"))
        return try await factory.makeBackend(context)
    }

    /// The backend's keys as the gateway would hold them: fixed sets as they are, URL sets fetched once.
    private func verificationKeys(of backend: any TokenBackend) async throws -> VerificationKeys {
        var sources: [BoundKeySource] = []
        for bound in backend.verificationKeys {
            switch bound.source {
            case .fixed:
                sources.append(bound)
            case .url(let url):
                guard let jwksFetcher else { throw ConformanceError("its keys are at \(url); give the check a jwksFetcher") }
                let set = try JWKSet(json: try await jwksFetcher.fetchJWKS(from: url.url))
                sources.append(BoundKeySource(.fixed(set), serviceAccount: bound.serviceAccount))
            }
        }
        guard !sources.isEmpty else { throw ConformanceError("verificationKeys is empty: no token of it can be verified") }
        return try VerificationKeys(fixed: sources)
    }

    /// Whether `task` finishes within `limit`; polled, so a task that ignores cancellation cannot hold the check.
    private static func ends(_ task: Task<Void, Never>, within limit: Duration) async -> Bool {
        let ended = Atomic(false)
        Task {
            await task.value
            ended.store(true, ordering: .releasing)
        }
        let deadline = ContinuousClock.now + limit
        while !ended.load(ordering: .acquiring), ContinuousClock.now < deadline { try? await Task.sleep(for: .milliseconds(10)) }
        return ended.load(ordering: .acquiring)
    }

    /// The context the check asks a `type` token for: number 1 for each declared type (a backend that serves
    /// tokens it holds, such as the file source, must hold these), 2 as another context the token must not verify
    /// for, 3 to 5 for `notAfter`, cancellation and the failing section. Numbers give different contexts where
    /// the type has any (fleet-wide types have one).
    public static func context(of type: TokenType, number: Int) -> TokenContext {
        let id = "conformance-\(number)"
        let parameters: [String: String] =
            switch type {
            case .consumer: ["tripId": id]
            case .driver: ["vehicleId": id]
            case .deliveryDriver: ["deliveryVehicleId": id]
            case .trustedDeliveryDriver: ["deliveryVehicleId": id, "taskId": "\(id)-task"]
            case .deliveryConsumer: ["trackingId": id]
            case .batchTasks: ["taskIds": "\(id)-a,\(id)-b"]
            case .fleetReader, .deliveryFleetReader, .server: [:]
            }
        // The parameters above are valid for their type by construction.
        return try! TokenContext.parse(type: type, parameters: parameters)
    }
}

/// Why the check could not go on.
struct ConformanceError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
