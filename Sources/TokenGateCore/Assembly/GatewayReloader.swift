import Foundation
import JOSE
package import Logging
import OpenSSLPrimitives
import ServiceLifecycle
import Synchronization

/// Runs the current generation's background work and swaps in a new generation when the configuration changes:
/// on ``requestReload(trigger:)`` (the executable's SIGHUP), on ``reload(trigger:)``, and (optionally) when a poll of
/// `config.yaml` and every file it names sees new content. It traps no signal itself.
///
/// The next generation is built outside any lock, from the file as it is now, handing on from the running one
/// every part whose configuration did not change (caches, limiter state, session memos, key sets). It is swapped in
/// only if everything built; otherwise the running generation keeps serving untouched and the located reason is
/// logged. After a swap the old generation's work (key refreshers, file watchers) is cancelled and the new one's
/// started; requests in flight finish on the generation they started on.
package final class GatewayReloader: Service {
    /// The service whose generation is swapped.
    package let service: TokenService
    /// Builds each next generation.
    package let assembler: GatewayAssembler
    /// The configuration file.
    package let configurationPath: String
    /// How often to look at the files for a change; nil: only on ``requestReload(trigger:)`` or ``reload(trigger:)``.
    package let watchInterval: Duration?
    private let logger: Logger
    private let triggers: AsyncStream<String>
    private let trigger: AsyncStream<String>.Continuation
    private let swap = Mutex<SwapSignal>(SwapSignal())
    /// With a watch: the files' digest when the reloader was made, right after the running generation was built
    /// from them, so a change made before the watch first looks (the service group starts it some time later) is
    /// still seen as one.
    private let digestAtStart: [UInt8]?

    struct SwapSignal {
        var pending = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    /// A reloader of `service` from the file at `configurationPath`.
    package init(
        service: TokenService, assembler: GatewayAssembler, configurationPath: String, watchInterval: Duration? = nil,
        logger: Logger
    ) {
        self.service = service
        self.assembler = assembler
        self.configurationPath = configurationPath
        self.watchInterval = watchInterval
        self.logger = logger
        (triggers, trigger) = AsyncStream.makeStream(of: String.self)
        digestAtStart = watchInterval == nil ? nil : Self.watchDigest(of: configurationPath, environment: assembler.environment)
    }

    /// Asks for a reload without waiting for it: the reload trigger (the executable calls it on SIGHUP).
    package func requestReload(trigger reason: String) { trigger.yield(reason) }

    package func run() async throws {
        await cancelWhenGracefulShutdown {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await self.runGenerations() }
                group.addTask { await self.reloadOnRequest() }
                if let interval = self.watchInterval { group.addTask { await self.watch(every: interval) } }
                group.addTask { await self.housekeeping() }
                group.addTask { await self.watchReadiness() }
                await group.next()
                group.cancelAll()
            }
        }
        trigger.finish()
    }

    /// Builds the next generation and swaps it in if everything built; returns it, or throws the reason the running
    /// generation stays (and logs it).
    @discardableResult
    package func reload(trigger reason: String) async throws -> GatewayGeneration {
        let previous = service.generation
        let next: GatewayGeneration
        do {
            next = try await assembler.build(path: configurationPath, previous: previous)
            // The replicas' shared store is connected once, at start; a reload cannot move it.
            guard next.configuration.sharedState == previous.configuration.sharedState else {
                throw ConfigError(
                    file: configurationPath, mark: nil, keyPath: "sharedState",
                    message: "cannot change while the gateway runs; restart the replicas with the new settings")
            }
            // The audit file is opened anew on every reload (log rotation moves the old one away first); a file
            // that cannot be opened fails the reload like any other part.
            try service.audit.reopen(next.configuration.audit)
        } catch {
            assembler.metrics.recordReload(.failure)
            logger.error(
                "configuration not reloaded; the running one stays in force",
                metadata: ["trigger": "\(reason)", "generation": "\(previous.number)", "reason": "\(error)"])
            // Still let a rotated audit file go, at the path in force.
            do { try service.audit.reopen(service.audit.settings) } catch {
                logger.error("the audit log could not be reopened; writing on to the old file", metadata: ["reason": "\(error)"])
            }
            throw error
        }
        // A provider the reload adds must not start with no keys: fetch the new URLs before the swap (bounded by
        // the fetcher's deadline; a failure leaves the set to its refresher).
        await next.keySets.fetchMissing()
        // Whether Google still lists each signing key is asked again on every reload, not only every interval.
        await withTaskGroup(of: Void.self) { group in
            for runtime in next.providers.values { group.addTask { await runtime.keyHealth.refreshPublished() } }
        }
        service.install(next)
        service.readiness()
        signalSwap()
        assembler.metrics.recordReload(.success)
        for warning in next.warnings { logger.warning("configuration: \(warning)") }
        for (path, error) in next.brokenTenantFiles.sorted(by: { $0.key < $1.key }) {
            let kept = next.configuration.providerFiles.filter { $0.value == path && next.staleTenants[$0.key] != nil }.keys
            logger.error(
                kept.isEmpty
                    ? "tenant file not applied; its tenant is not served" : "tenant file not applied; its tenant keeps its last good configuration",
                metadata: ["file": "\(path)", "provider": "\(kept.map(\.rawValue).sorted().joined(separator: ","))", "reason": "\(error)"])
        }
        var listenerSettings = next.configuration.server
        listenerSettings.tls = previous.configuration.server.tls
        let tlsSwitched = (next.configuration.server.tls == nil) != (previous.configuration.server.tls == nil)
        if listenerSettings != previous.configuration.server || tlsSwitched {
            logger.warning("server settings other than the TLS certificate and key take effect on restart only")
        }
        if next.configuration.tracing != previous.configuration.tracing {
            logger.warning("tracing settings take effect on restart only")
        }
        let kept = next.providers.values.filter { $0.cache === previous.providers[$0.id]?.cache }.map(\.id.rawValue).sorted()
        logger.notice(
            "configuration reloaded",
            metadata: [
                "trigger": "\(reason)", "generation": "\(next.number)", "config_sha256": "\(next.configurationDigest)",
                "providers": "\(next.providers.count)", "caches_kept": "\(kept.joined(separator: ","))",
            ])
        return next
    }

    private func reloadOnRequest() async {
        for await reason in triggers { _ = try? await reload(trigger: reason) }
    }

    /// Runs each generation's services until the next swap, then cancels them and runs the next one's.
    private func runGenerations() async {
        var generation = service.generation
        while !Task.isCancelled {
            let services = generation.services + (service.acceptanceChecks(of: generation).map { [$0] } ?? [])
            let logger = logger
            let swapped = await withTaskGroup(of: Bool.self) { group in
                group.addTask {
                    await withTaskGroup(of: Void.self) { work in
                        for service in services {
                            work.addTask {
                                do { try await service.run() } catch {
                                    logger.error("background work failed", metadata: ["service": "\(type(of: service))", "reason": "\(error)"])
                                }
                            }
                        }
                    }
                    return false
                }
                group.addTask { await self.nextSwap() }
                defer { group.cancelAll() }
                while let result = await group.next() {
                    if result { return true }
                    if Task.isCancelled { return false }
                }
                return false
            }
            guard swapped else { return }
            generation = service.generation
        }
    }

    private func signalSwap() {
        let waiter = swap.withLock { signal in
            signal.pending = true
            defer { signal.waiter = nil }
            return signal.waiter
        }
        waiter?.resume()
    }

    /// Returns true at the next swap, false if cancelled first.
    private func nextSwap() async -> Bool {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let resumeNow = swap.withLock { signal -> Bool in
                    if signal.pending || Task.isCancelled { return true }
                    signal.waiter = continuation
                    return false
                }
                if resumeNow { continuation.resume() }
            }
        } onCancel: {
            let waiter = swap.withLock { signal in
                defer { signal.waiter = nil }
                return signal.waiter
            }
            waiter?.resume()
        }
        return swap.withLock { signal in
            defer { signal.pending = false }
            return signal.pending && !Task.isCancelled
        }
    }

    /// Polls the configuration and every file it names; a change seen twice in a row (not mid-write) reloads.
    private func watch(every interval: Duration) async {
        var loaded = digestAtStart
        var lastSeen = loaded
        while !Task.isCancelled {
            do { try await Task.sleep(for: interval) } catch { return }
            let seen = Self.watchDigest(of: configurationPath, environment: assembler.environment)
            if seen != loaded, seen == lastSeen {
                loaded = seen
                requestReload(trigger: "file change")
            }
            lastSeen = seen
        }
    }

    private static func watchDigest(of configurationPath: String, environment: [String: String]) -> [UInt8]? {
        guard let data = FileManager.default.contents(atPath: configurationPath) else { return nil }
        let file = ConfigFile(path: configurationPath, environment: environment)
        let root = try? ConfigNode.parse([UInt8](data), file: file)
        var text = root?.fingerprintText() ?? ""
        // Tenant files: their names (one added or removed is a change) and contents, with the files they name.
        for tenant in root.map(TenantFiles.files(of:)) ?? [] {
            text += "|\(tenant.path)=" + HexBytes.encode((try? Digest.sha256(tenant.bytes)) ?? [])
            let tenantFile = ConfigFile(path: tenant.path, environment: environment)
            text += (try? ConfigNode.parse(tenant.bytes, file: tenantFile).fingerprintText()) ?? ""
        }
        return try? Digest.sha256([UInt8](data) + Array(text.utf8))
    }

    /// Every 2 s (and after each swap): each provider's readiness, so a change is logged, dated and in the gauges
    /// when it happens, not at the next probe or scrape.
    private func watchReadiness() async {
        while !Task.isCancelled {
            service.readiness()
            do { try await Task.sleep(for: .seconds(2)) } catch { return }
        }
    }

    /// Every 10 s: the counts of denials not logged one by one, and a warning once for each certificate whose
    /// validity has ended since it was loaded (its key keeps verifying until the configuration is changed).
    private func housekeeping() async {
        var reported: Set<String> = []
        while !Task.isCancelled {
            do { try await Task.sleep(for: .seconds(10)) } catch { return }
            service.flushDenialLog()
            let now = assembler.clock.wallSeconds()
            for expiry in service.generation.certificateExpiries where expiry.expiresAt < now {
                guard reported.insert("\(expiry.provider) \(expiry.serviceAccount) \(expiry.expiresAt)").inserted else { continue }
                logger.warning(
                    "a verification certificate has expired; replace it and reload",
                    metadata: ["provider": "\(expiry.provider)", "service_account": "\(expiry.serviceAccount)", "expired_at": "\(expiry.expiresAt)"])
            }
        }
    }
}
