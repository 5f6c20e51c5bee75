import Foundation
import JOSE
import Logging
import Testing
import TokenGateCoreTesting

@testable import TokenGateCore

/// A reload hands a provider's parts on by reload unit (``ProviderUnits``): a unit whose configuration is unchanged
/// is the same instance afterwards, with its state (cached tokens, an open circuit, spent allowances, cached
/// answers), and a change to its configuration rebuilds it without rebuilding the other units.
@Suite struct ReloadGroupTests {
    static let apiKey = "tg_acme"
    static let acme = ProviderID("acme-rides")!

    /// What each test changes between the two generations.
    enum Change: String, CaseIterable, Sendable {
        case nothing, backend, calls, clients, limits

        /// The units the reload hands on; the others are rebuilt.
        var handedOn: Set<String> {
            switch self {
            case .nothing: ["backend", "backendCalls", "mintBudget", "clients", "authorizerCalls", "limits"]
            // A new backend starts with closed circuits.
            case .backend: ["mintBudget", "clients", "authorizerCalls", "limits"]
            // The guards and the budget take the new settings; the backend keeps its cache.
            case .calls: ["backend", "clients", "limits"]
            case .clients: ["backend", "backendCalls", "mintBudget", "limits"]
            case .limits: ["backend", "backendCalls", "mintBudget", "clients", "authorizerCalls"]
            }
        }
    }

    let clock = ManualClock(wallSeconds: 1_700_000_000)
    let assembler: GatewayAssembler

    init() {
        assembler = GatewayAssembler(
            registry: BackendRegistry([SigningTestFactory()]), environment: [:], clock: clock.gatewayClock,
            logger: Logger(label: "reload-groups") { _ in SwiftLogNoOpLogHandler() }, jwksFetcher: ScriptedJWKSFetcher(.failure("none")))
    }

    /// The configuration as it is before the reload, or with `change` made.
    static func yaml(_ change: Change = .nothing) -> String {
        let plan = change == .backend ? 2 : 1
        let calls = change == .calls ? 32 : 16
        let limit = change == .limits ? 2 : 1
        let other = change == .clients ? [ProviderYAML.apiKey("other", TestAPIKey("tg_other"))] : []
        return ProviderYAML.config(
            ProviderYAML(
                "acme-rides", settings: ["rateLimits: { provider: { rate: 1/min, burst: \(limit) } }"],
                backend: .flow("{ type: signing, plan: \(plan), maxConcurrentCalls: \(calls), mintBudget: { rate: 1/min, burst: 1 } }"),
                clients: [ProviderYAML.apiKey("app", TestAPIKey(apiKey))] + other))
    }

    func build(_ change: Change, previous: GatewayGeneration? = nil) async throws -> ProviderRuntime {
        let generation = try await assembler.build(
            bytes: Array(Self.yaml(change).utf8), file: ConfigFile(path: "config.yaml", environment: [:]), previous: previous)
        return try #require(generation.providers[Self.acme])
    }

    /// The state each unit holds, as the tests leave it.
    struct UnitState: Equatable {
        var cachedTokens: Int
        var backendCircuit: CallGuard.CircuitState
        var mintBudgetLeft: Bool
        var cachedAnswers: Int
        var authorizerCircuit: CallGuard.CircuitState
        var providerAllowanceLeft: Bool
    }

    /// Which units `next` took over from `previous` (the same instances).
    static func handedOn(from previous: ProviderRuntime, to next: ProviderRuntime) -> Set<String> {
        let same: [(String, Bool)] = [
            ("backend", next.cache === previous.cache),
            ("backendCalls", next.backendGuards.callGuard(for: .consumer) === previous.backendGuards.callGuard(for: .consumer)),
            ("mintBudget", next.mintBudget === previous.mintBudget),
            ("clients", next.authenticator === previous.authenticator && next.authorizer.answers === previous.authorizer.answers),
            ("authorizerCalls", next.authorizer.callGuard === previous.authorizer.callGuard),
            ("limits", next.limiters.buckets === previous.limiters.buckets),
        ]
        return Set(same.filter(\.1).map(\.0))
    }

    struct Sick: Error {}

    /// Leaves state in every unit: a cached token (its mint spent the budget and the provider's allowance), both
    /// circuits open, one cached authorizer answer.
    func useEveryUnit(of runtime: ProviderRuntime, in generation: GatewayGeneration) async throws {
        let service = TokenService(
            generation: generation, formatter: { _ in TokenOnlyFormat() }, clock: clock.gatewayClock,
            logger: Logger(label: "reload-groups") { _ in SwiftLogNoOpLogHandler() })
        _ = try await service.token(
            for: TokenQuery(providerID: "acme-rides", tokenType: "consumer", parameters: ["tripId": "trip-1"], authorization: "Bearer \(Self.apiKey)")
        )
        for callGuard in [runtime.backendGuards.callGuard(for: .consumer)!, runtime.authorizer.callGuard] {
            for _ in 0..<5 { _ = try? await callGuard.run { throw Sick() } }
        }
        let key = AuthorizerDecisionCache.Key(client: "app", subject: "rider-1", context: .trip(ContextID("trip-1")!))
        _ = await runtime.authorizer.answers.verdict(for: key, cacheFor: .seconds(60)) { .allowed(until: nil) }
    }

    @Test(arguments: Change.allCases)
    func aReloadKeepsTheUnitsWhoseConfigurationIsUnchangedAndRebuildsOnlyTheChangedOnes(change: Change) async throws {
        let generation = try await assembler.build(
            bytes: Array(Self.yaml().utf8), file: ConfigFile(path: "config.yaml", environment: [:]))
        let before = try #require(generation.providers[Self.acme])
        try await useEveryUnit(of: before, in: generation)
        let used = UnitState(before)
        #expect(
            used
                == UnitState(
                    cachedTokens: 1, backendCircuit: .open, mintBudgetLeft: false, cachedAnswers: 1, authorizerCircuit: .open,
                    providerAllowanceLeft: false))

        let after = try await build(change, previous: generation)
        #expect(Self.handedOn(from: before, to: after) == change.handedOn)
        // A unit handed on keeps its state; a rebuilt one starts afresh.
        let kept = change.handedOn
        let fresh = UnitState(try await build(change))
        var expected = used
        if !kept.contains("backend") { expected.cachedTokens = fresh.cachedTokens }
        if !kept.contains("backendCalls") { expected.backendCircuit = fresh.backendCircuit }
        if !kept.contains("mintBudget") { expected.mintBudgetLeft = fresh.mintBudgetLeft }
        if !kept.contains("clients") { expected.cachedAnswers = fresh.cachedAnswers }
        if !kept.contains("authorizerCalls") { expected.authorizerCircuit = fresh.authorizerCircuit }
        if !kept.contains("limits") { expected.providerAllowanceLeft = fresh.providerAllowanceLeft }
        #expect(UnitState(after) == expected)
        #expect(
            fresh
                == UnitState(
                    cachedTokens: 0, backendCircuit: .closed, mintBudgetLeft: true, cachedAnswers: 0, authorizerCircuit: .closed,
                    providerAllowanceLeft: true))
    }

    @Test func aLimitsOnlyChangeKeepsTheBackendUnitAndItsCachedToken() async throws {
        let generation = try await assembler.build(bytes: Array(Self.yaml().utf8), file: ConfigFile(path: "config.yaml", environment: [:]))
        let before = try #require(generation.providers[Self.acme])
        try await useEveryUnit(of: before, in: generation)
        let after = try await build(.limits, previous: generation)
        #expect(after.units.backend.builtFrom == before.units.backend.builtFrom)
        #expect(after.cache === before.cache)
        #expect(after.cache.servableValue(for: .trip(ContextID("trip-1")!)) != nil)
        #expect(after.limiters.buckets !== before.limiters.buckets)
    }
}

extension ReloadGroupTests.UnitState {
    init(_ runtime: ProviderRuntime) {
        cachedTokens = runtime.cache.count
        backendCircuit = runtime.backendGuards.callGuard(for: .consumer)?.circuit.state ?? .closed
        mintBudgetLeft = runtime.mintBudget?.peek(true).isAllowed ?? true
        cachedAnswers = runtime.authorizer.answers.count
        authorizerCircuit = runtime.authorizer.callGuard.circuit.state
        providerAllowanceLeft = runtime.limiters.buckets.provider?.peek(ReloadGroupTests.acme).isAllowed ?? true
    }
}
