import Logging
import ServiceLifecycle

/// A provider's acceptance check as its runtime holds it: the settings and the transport its calls go by.
struct AcceptanceCheck: Sendable {
    let settings: AcceptanceCheckSettings
    let transport: any FleetEngineTransport

    /// The probes, one per token type, in the configured order.
    var probes: [AcceptanceProbe] { settings.tokenTypes.compactMap { AcceptanceProbe($0, id: settings.contextID) } }
}

extension ProviderPipeline {
    /// The caller every probe's token is minted for, as the audit log names it: the gateway itself.
    static let acceptanceCaller = "acceptance-check"

    /// Checks every configured token type once: mints a token for the probe's context through the backend and
    /// verifies it as any token (charged to the mint budget and the circuit, audited as `acceptance-check`, never
    /// cached), then makes the one Fleet Engine call. Outcomes in the configured order.
    func checkAcceptance(_ check: AcceptanceCheck) async -> [(AcceptanceProbe, AcceptanceOutcome)] {
        var outcomes: [(AcceptanceProbe, AcceptanceOutcome)] = []
        for probe in check.probes { outcomes.append((probe, await checkAcceptance(probe, check))) }
        return outcomes
    }

    private func checkAcceptance(_ probe: AcceptanceProbe, _ check: AcceptanceCheck) async -> AcceptanceOutcome {
        let caller = AuthenticatedCaller(provider: runtime.id, name: Self.acceptanceCaller, kind: .gateway, grants: [:])
        let query = TokenQuery(providerID: runtime.id.rawValue, tokenType: probe.type.rawValue, parameters: [:], authorization: nil)
        let admission = TokenAdmission(pipeline: self, query: query, type: probe.type, context: probe.context, caller: caller)
        // Short-lived where the backend mints: long enough to pass the check every token passes (cache.minRemaining)
        // and the call, no longer. A backend that fetches tokens decides their lifetime itself.
        let now = services.clock.wallSeconds()
        let notAfter =
            runtime.backend.tokenLifetimes == nil ? nil : now + TokenGateClock.secondsRoundingUp(runtime.settings.cache.minRemaining) + 120
        let token: DeliveredToken
        do {
            token = try await fetchVerified(for: admission, notAfter: notAfter)
        } catch {
            return AcceptanceOutcome(unknown: "no token to check with: \(error)")
        }
        let request = FleetEngineRequest(
            url: probe.url(endpoint: check.settings.endpoint, project: runtime.id), token: token.compact, timeout: check.settings.timeout)
        do {
            return AcceptanceOutcome(response: try await check.transport.send(request))
        } catch {
            return AcceptanceOutcome(unknown: "Fleet Engine did not answer: \(error)")
        }
    }
}

/// Runs the acceptance checks of one generation's providers: each provider on its own schedule (its interval
/// from its last check, so a reload does not check again unless it changed the check), never before the provider
/// has stopped starting. Cancelled by the reloader at the next swap.
package struct AcceptanceCheckRunner: Service {
    let pipelines: [ProviderPipeline]
    let results: AcceptanceResults

    package func run() async throws {
        await withTaskGroup(of: Void.self) { group in
            for pipeline in pipelines {
                guard let check = pipeline.runtime.acceptanceCheck else { continue }
                group.addTask { await Self.loop(pipeline, check, results) }
            }
        }
    }

    private static func loop(_ pipeline: ProviderPipeline, _ check: AcceptanceCheck, _ results: AcceptanceResults) async {
        let id = pipeline.runtime.id
        while !Task.isCancelled {
            do { try await Task.sleep(until: results.nextCheck(of: id, check.settings), clock: .continuous) } catch { return }
            // A provider waiting for its first key set or access token would only report that; wait for it.
            if pipeline.runtime.readiness.state == .starting {
                do { try await Task.sleep(for: .seconds(1)) } catch { return }
                continue
            }
            results.ran(id, check.settings)
            for (probe, outcome) in await pipeline.checkAcceptance(check) where !Task.isCancelled {
                results.record(outcome, of: probe, at: id)
            }
        }
    }
}
