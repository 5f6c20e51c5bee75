import JOSE
import Synchronization
import Testing
import TokenGateCoreTesting

@testable import TokenGateCore

/// An authorizer transport in memory: answers from a script, records every question, and can hold answers back until
/// a test opens the gate.
final class ScriptedAuthorizerTransport: AuthorizerTransport {
    private let script: @Sendable (AuthorizerRequest) async throws -> AuthorizerResponse
    private let requests = Mutex<[AuthorizerRequest]>([])

    init(_ script: @escaping @Sendable (AuthorizerRequest) async throws -> AuthorizerResponse) {
        self.script = script
    }

    /// Always answers `status` with `body`.
    convenience init(status: Int, body: String = "") {
        self.init { _ in AuthorizerResponse(status: status, body: Array(body.utf8)) }
    }

    static let yes = #"{"allowed": true}"#
    static let no = #"{"allowed": false}"#

    var calls: Int { requests.withLock { $0.count } }
    var urls: [String] { requests.withLock { $0.map(\.url) } }

    func send(_ request: AuthorizerRequest) async throws -> AuthorizerResponse {
        requests.withLock { $0.append(request) }
        return try await script(request)
    }
}

/// ``ProviderAuthorizer`` with in-memory transports: the answer contract, fail-closed, the cache and single flight.
@Suite(.timeLimit(.minutes(5))) struct AuthorizerTests {
    static let acme = AuthFixtures.acme
    static let trip = AuthFixtures.trip("trip-1")
    static let url = "https://auth.acme.test/can?subject={subject}&client={client}&trip={tripId}"

    let clock = ManualClock(wallSeconds: 1_700_000_000)
    let metrics = GatewayMetrics().provider(AuthFixtures.acme, tokenTypes: [.consumer], hasAuthorizer: true)

    func authorizer(
        _ transport: any AuthorizerTransport, cacheFor: Duration = .seconds(60), timeout: Duration = .seconds(10), maxEntries: Int = 100
    ) throws -> ProviderAuthorizer {
        let settings = AuthorizerSettings(url: try AuthorizerURLTemplate(parsing: Self.url), cacheFor: cacheFor, timeout: timeout)
        let clients = [
            ClientConfig(name: "rider-app", credential: .apiKey(sha256: []), allow: [.consumer: .anyContext], authorizer: settings),
            ClientConfig(name: "plain", credential: .apiKey(sha256: []), allow: [.consumer: .anyContext]),
        ]
        return ProviderAuthorizer(
            provider: Self.acme, clients: clients, transport: transport, metrics: metrics,
            answers: AuthorizerDecisionCache(clock: clock.gatewayClock, maxEntries: maxEntries),
            guard: CallGuard(.authorizer, settings: BackendGuardSettings(), clock: clock.gatewayClock, metrics: .none))
    }

    static func rider(_ subject: String? = "user-1") -> AuthenticatedCaller {
        AuthenticatedCaller(provider: acme, name: "rider-app", kind: .sessionToken, subject: subject, grants: [.consumer: .anyContext])
    }

    /// The code `check` threw, or nil when it allowed.
    func outcome(
        _ authorizer: ProviderAuthorizer, _ caller: AuthenticatedCaller = AuthorizerTests.rider(), _ context: TokenContext = AuthorizerTests.trip
    ) async -> TokenGateError.Code? {
        do {
            try await authorizer.check(caller, for: context)
            return nil
        } catch {
            return error.code
        }
    }

    @Test func aYesAllowsAndTheURLCarriesTheSubjectClientAndTrip() async throws {
        let transport = ScriptedAuthorizerTransport(status: 200, body: ScriptedAuthorizerTransport.yes)
        let authorizer = try authorizer(transport)
        #expect(await outcome(authorizer, Self.rider("user 1/ü")) == nil)
        #expect(transport.urls == ["https://auth.acme.test/can?subject=user%201%2F%C3%BC&client=rider-app&trip=trip-1"])
    }

    @Test(arguments: [
        (200, ScriptedAuthorizerTransport.no), (403, ""), (404, #"{"allowed": true}"#), (200, #"{"allowed": false, "why": "not yours"}"#),
    ])
    func aNoIsForbidden(status: Int, body: String) async throws {
        #expect(await outcome(try authorizer(ScriptedAuthorizerTransport(status: status, body: body))) == .forbidden)
    }

    @Test(arguments: [
        (500, ScriptedAuthorizerTransport.yes), (401, ""), (302, ""), (201, ScriptedAuthorizerTransport.yes), (200, ""), (200, "true"),
        (200, #"{"allowed": "yes"}"#), (200, #"{"allowed": 1}"#), (200, #"{"permitted": true}"#), (200, #"{"allowed": true"#),
        (200, #"{"allowed": false, "allowed": true}"#), (200, #"{"allowed": true, "pad": "\#(String(repeating: "x", count: 4096))"}"#),
        (200, #"{"allowed": true, "until": "2026-11-27T14:05:00Z"}"#), (200, #"{"allowed": true, "until": 1.8e9}"#),
        (200, #"{"allowed": true, "until": 0}"#), (200, #"{"allowed": true, "until": true}"#),
    ])
    func anythingButAClearAnswerIsUnavailableNeverAnAllow(status: Int, body: String) async throws {
        let transport = ScriptedAuthorizerTransport(status: status, body: body)
        let authorizer = try authorizer(transport)
        #expect(await outcome(authorizer) == .authorizerUnavailable)
        // Never cached: the next request asks again.
        #expect(await outcome(authorizer) == .authorizerUnavailable)
        #expect(transport.calls == 2)
    }

    @Test func aYesMayBoundTheTokenWithUntilAndTheBoundIsCachedWithTheAnswer() async throws {
        let transport = ScriptedAuthorizerTransport(status: 200, body: #"{"allowed": true, "until": 1795788300}"#)
        let authorizer = try authorizer(transport)
        #expect(try await authorizer.check(Self.rider(), for: Self.trip) == 1_795_788_300)
        #expect(try await authorizer.check(Self.rider(), for: Self.trip) == 1_795_788_300)
        #expect(transport.calls == 1)
        let unbounded = try self.authorizer(ScriptedAuthorizerTransport(status: 200, body: #"{"allowed": true, "until": null}"#))
        #expect(try await unbounded.check(Self.rider(), for: Self.trip) == nil)
    }

    @Test func aTransportErrorIsUnavailable() async throws {
        struct Refused: Error {}
        let authorizer = try authorizer(ScriptedAuthorizerTransport { _ in throw Refused() })
        #expect(await outcome(authorizer) == .authorizerUnavailable)
    }

    @Test func anAnswerLaterThanTheTimeoutIsUnavailableWhateverTheTransportDoes() async throws {
        // The transport would wait a minute; the authorizer's own deadline ends the exchange (and cancels it).
        let transport = ScriptedAuthorizerTransport { _ in
            try await Task.sleep(for: .seconds(60))
            return AuthorizerResponse(status: 200, body: Array(ScriptedAuthorizerTransport.yes.utf8))
        }
        let authorizer = try authorizer(transport, timeout: .milliseconds(50))
        #expect(await outcome(authorizer) == .authorizerUnavailable)
        #expect(await outcome(authorizer) == .authorizerUnavailable)
        #expect(transport.calls == 2)
    }

    @Test func yesAndNoAreCachedPerSubjectAndContextForCacheFor() async throws {
        let transport = ScriptedAuthorizerTransport { request in
            let allowed = !request.url.contains("trip=trip-no")
            return AuthorizerResponse(status: 200, body: Array((allowed ? ScriptedAuthorizerTransport.yes : ScriptedAuthorizerTransport.no).utf8))
        }
        let authorizer = try authorizer(transport, cacheFor: .seconds(60))
        let denied = AuthFixtures.trip("trip-no")
        #expect(await outcome(authorizer) == nil)
        #expect(await outcome(authorizer, Self.rider(), denied) == .forbidden)
        #expect(await outcome(authorizer) == nil)
        #expect(await outcome(authorizer, Self.rider(), denied) == .forbidden)
        #expect(transport.calls == 2)
        #expect(authorizer.answers.count == 2)
        // Another subject, another trip: asked.
        #expect(await outcome(authorizer, Self.rider("user-2")) == nil)
        #expect(await outcome(authorizer, Self.rider(), AuthFixtures.trip("trip-2")) == nil)
        #expect(transport.calls == 4)
        // Just before cacheFor has passed: cached; once it has: asked again.
        clock.advance(by: .milliseconds(59_999))
        #expect(await outcome(authorizer) == nil)
        #expect(transport.calls == 4)
        clock.advance(by: .milliseconds(1))
        #expect(await outcome(authorizer) == nil)
        #expect(await outcome(authorizer, Self.rider(), denied) == .forbidden)
        #expect(transport.calls == 6)
    }

    @Test func cacheForZeroAsksEveryTime() async throws {
        let transport = ScriptedAuthorizerTransport(status: 200, body: ScriptedAuthorizerTransport.yes)
        let authorizer = try authorizer(transport, cacheFor: .zero)
        for _ in 0..<3 { #expect(await outcome(authorizer) == nil) }
        #expect(transport.calls == 3)
        #expect(authorizer.answers.count == 0)
    }

    @Test func theCacheIsBoundedLeastRecentlyUsedFirst() async throws {
        let transport = ScriptedAuthorizerTransport(status: 200, body: ScriptedAuthorizerTransport.yes)
        let authorizer = try authorizer(transport, maxEntries: 2)
        for trip in ["a", "b", "a", "c"] { #expect(await outcome(authorizer, Self.rider(), AuthFixtures.trip(trip)) == nil) }
        #expect(authorizer.answers.count == 2)
        #expect(transport.calls == 3)
        // "b" was the least recently used: evicted, so asked again; "a" and "c" are still cached.
        #expect(await outcome(authorizer, Self.rider(), AuthFixtures.trip("b")) == nil)
        #expect(await outcome(authorizer, Self.rider(), AuthFixtures.trip("c")) == nil)
        #expect(transport.calls == 4)
    }

    @Test func concurrentIdenticalQuestionsShareOneCall() async throws {
        let gate = AsyncGate()
        let transport = ScriptedAuthorizerTransport { _ in
            await gate.wait()
            return AuthorizerResponse(status: 200, body: Array(ScriptedAuthorizerTransport.yes.utf8))
        }
        let authorizer = try authorizer(transport)
        let key = AuthorizerDecisionCache.Key(client: "rider-app", subject: "user-1", context: Self.trip)
        try await withThrowingTaskGroup(of: TokenGateError.Code?.self) { group in
            for _ in 0..<8 { group.addTask { await outcome(authorizer) } }
            try await yieldUntil { transport.calls == 1 && authorizer.answers.joinedCount(for: key) == 7 }
            gate.open()
            for try await code in group { #expect(code == nil) }
        }
        #expect(transport.calls == 1)
    }

    @Test func aSessionTokenWithoutSubOrADotsOnlyPathValueIsRefusedWithoutACall() async throws {
        let transport = ScriptedAuthorizerTransport(status: 200, body: ScriptedAuthorizerTransport.yes)
        #expect(await outcome(try authorizer(transport), Self.rider(nil)) == .forbidden)
        #expect(await outcome(try authorizer(transport), Self.rider("")) == .forbidden)
        let settings = AuthorizerSettings(url: try AuthorizerURLTemplate(parsing: "https://auth.acme.test/users/{subject}?trip={tripId}"))
        let pathAuthorizer = ProviderAuthorizer(
            provider: Self.acme,
            clients: [ClientConfig(name: "rider-app", credential: .apiKey(sha256: []), allow: [.consumer: .anyContext], authorizer: settings)],
            transport: transport, metrics: metrics, answers: AuthorizerDecisionCache(clock: clock.gatewayClock),
            guard: CallGuard(.authorizer, settings: BackendGuardSettings(), clock: clock.gatewayClock, metrics: .none))
        #expect(await outcome(pathAuthorizer, Self.rider("..")) == .forbidden)
        #expect(transport.calls == 0)
    }

    @Test func aClientWithoutAnAuthorizerIsNeverAsked() async throws {
        let transport = ScriptedAuthorizerTransport(status: 500)
        let caller = AuthenticatedCaller(provider: Self.acme, name: "plain", kind: .apiKey, grants: [.consumer: .anyContext])
        #expect(await outcome(try authorizer(transport), caller) == nil)
        #expect(transport.calls == 0)
    }

    @Test func anAPIKeyCallersSubjectIsItsClientName() async throws {
        let transport = ScriptedAuthorizerTransport(status: 200, body: ScriptedAuthorizerTransport.yes)
        let caller = AuthenticatedCaller(provider: Self.acme, name: "rider-app", kind: .apiKey, grants: [.consumer: .anyContext])
        #expect(await outcome(try authorizer(transport), caller) == nil)
        #expect(transport.urls == ["https://auth.acme.test/can?subject=rider-app&client=rider-app&trip=trip-1"])
    }

    @Test func anAssemblerWithoutATransportFailsClosed() async throws {
        let transport = UnavailableAuthorizerTransport()
        #expect(await outcome(try authorizer(transport)) == .authorizerUnavailable)
    }

    @Test func aJWTClientsAnyGrantPassesAuthorizeOnlyWithAnAuthorizer() throws {
        let idp = try TestIdentityProvider()
        let settings = AuthorizerSettings(url: try AuthorizerURLTemplate(parsing: Self.url))
        var withAuthorizer = idp.client(name: "rider-app", allow: [.consumer: .anyContext])
        withAuthorizer.authorizer = settings
        let without = idp.client(name: "other-app", allow: [.consumer: .anyContext])
        let authenticator = CallerAuthenticator(provider: Self.acme, clients: [withAuthorizer, without], clock: clock.gatewayClock)
        try authenticator.authorize(Self.rider(), for: Self.trip)
        // Never the fleet, even with a grant made by hand.
        let fleet = AuthenticatedCaller(provider: Self.acme, name: "rider-app", kind: .sessionToken, subject: "u", grants: [.server: .anyContext])
        #expect(authError { try authenticator.authorize(fleet, for: .fleet) }?.code == .forbidden)
        let other = AuthenticatedCaller(provider: Self.acme, name: "other-app", kind: .sessionToken, subject: "u", grants: [.consumer: .anyContext])
        #expect(authError { try authenticator.authorize(other, for: Self.trip) }?.code == .forbidden)
    }
}
