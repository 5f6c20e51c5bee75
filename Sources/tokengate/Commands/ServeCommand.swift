import ArgumentParser
import Foundation
import JOSE
import Logging
import Metrics
import NIOCore
import OpenSSLPrimitives
import ServiceLifecycle
import TokenGateCore
import TokenGateHTTP
import TokenGateRedis
import Tracing
import UnixSignals

/// `tokengate serve`: the gateway.
struct ServeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve Fleet Engine tokens over HTTP for every provider in the configuration.",
        discussion: """
            SIGHUP (or `tokengate reload`) reloads the configuration: the next generation is built beside the \
            running one and swapped in whole only if everything in it built. SIGTERM and SIGINT shut down \
            gracefully.
            """
    )

    @OptionGroup var configuration: ConfigurationOptions
    @Option(name: .long, help: "Listen on this address instead of server.host.")
    var host: String?
    @Option(name: .long, help: "Listen on this port instead of server.port (0: any free port).")
    var port: Int?
    @Option(name: .long, help: "Serve the admin endpoints (/metrics, /healthz, /readyz) on this port instead of server.admin.port.")
    var adminPort: Int?
    @Option(name: .long, help: "trace, debug, info, notice, warning, error or critical (default: server.logLevel, else info).")
    var logLevel: String?
    @Option(name: .long, help: "Write the process ID here (for `tokengate reload`); removed on exit.")
    var pidFile: String?
    @Option(name: .long, help: "Also reload when config.yaml or a file it names changes; look this often (e.g. 5s).")
    var watch: String?

    func run() async throws {
        // The file is read once here for what must exist before the assembly, and once by the assembly.
        let start = GatewayAssembler.startSettings(path: configuration.config, environment: ProcessInfo.processInfo.environment)
        try bootstrapLogging(start.server)
        // One Prometheus registry for the process: the gateway's instruments and any library's swift-metrics.
        let exporter = MetricsExporter()
        MetricsSystem.bootstrap(exporter.factory)
        let watchInterval = try parsedWatchInterval()
        let logger = Self.budgeted(Logger(label: "tokengate"), start.server)
        // Before the HTTP clients are made: each keeps the tracer it saw when it was created.
        let tracing = try startTracing(start.tracing, logger: logger)
        try await configuration.withAssembler(logger: logger, metrics: GatewayMetrics(factory: exporter.factory)) { assembler in
            let generation = try await configuration.assemble(assembler)
            var server = try listenerSettings(generation.configuration.server)
            logProviders(generation, logger: logger)
            try fitConnectionsToFileDescriptorLimit(&server, logger: logger)
            let audit = try openAuditLog(generation, logger: logger)
            let loopCount = ServerEventLoops.count(for: server)
            // Not shut down when serving ends: the process exits then, and work still finishing at that moment (the
            // close of a client's connection, a task that prefers a loop) may schedule on a loop to the last; a
            // loop shut down prints an error line for each, which is not a JSON log line (seen under a loaded CI).
            let eventLoops = ServerEventLoops.makeGroup(for: server)
            let sharedState = try connectSharedState(generation, metrics: assembler.metrics, eventLoops: eventLoops, logger: logger)
            let service = TokenService(
                generation: generation, audit: audit, sharedState: sharedState, tracer: tracing?.tracer, logger: logger)
            logger.notice("serving on \(loopCount) event loop\(loopCount == 1 ? "" : "s")")
            var services = try listeners(service: service, exporter: exporter, server: server, eventLoops: eventLoops, logger: logger)
            if let sharedState { services.append(EndedContextsReplication(service: service, sharedState: sharedState)) }
            services.append(HeapTrim())
            // The reloader runs each generation's background work (JWKS refreshers, file watchers) and swaps
            // generations on SIGHUP (ReloadOnHangup asks it). A JWKS URL is fetched for the first time now, not
            // before: until then, tokens its keys verify are refused, while every other provider and client is
            // served from the start.
            let reloader = GatewayReloader(
                service: service, assembler: assembler, configurationPath: configuration.config,
                watchInterval: watchInterval, logger: logger)
            let hangup = ReloadOnHangup(reloader: reloader, logger: logger)
            // The span exporter first: the group stops services in reverse order, so it flushes last.
            try await serve(
                (tracing.map { [$0.exporter] } ?? []) + services + [reloader, hangup], sharedState: sharedState, logger: logger)
        }
    }

    /// Logging as the file's server section and `--log-level` say (a file that does not parse is reported later,
    /// by the assembly, through this logging).
    private func bootstrapLogging(_ settings: ServerSettings?) throws {
        var level = settings?.logLevel ?? .info
        if let logLevel {
            guard let parsed = Logger.Level(rawValue: logLevel) else { throw CLIFailure(.usage, "unknown --log-level '\(logLevel)'") }
            level = parsed
        }
        let format = settings?.logFormat ?? .text
        LoggingSystem.bootstrap { [level] label in
            var handler: any LogHandler = format == .json ? JSONLogHandler(label: label) : StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
    }

    /// `logger` with each tenant's lines taken from its share of the log (`server.logBudget`). Read at start: a
    /// reload does not change it.
    static func budgeted(_ logger: Logger, _ settings: ServerSettings?) -> Logger {
        guard let limit = (settings ?? ServerSettings()).logBudget else { return logger }
        return TenantLogBudget(limit: limit).wrap(logger)
    }

    /// `--watch` as a duration of at least 100 ms, or nil.
    private func parsedWatchInterval() throws -> Duration? {
        guard let watch else { return nil }
        guard let interval = ConfigDuration.parse(watch), interval >= .milliseconds(100) else {
            throw CLIFailure(.usage, "--watch takes a duration of at least 100ms, such as 5s")
        }
        return interval
    }

    /// The OTLP exporter and tracer of the file's `tracing:` section, or nil without one.
    private func startTracing(_ settings: TracingSettings?, logger: Logger) throws -> (tracer: any Tracer, exporter: any Service)? {
        try settings.map { settings in
            do {
                let tracing = try OpenTelemetryTracing.bootstrap(settings, logger: logger)
                logger.notice(
                    "tracing: spans exported over OTLP/HTTP; every token request takes the router (no event-loop fast path)",
                    metadata: ["endpoint": "\(settings.endpoint)", "sample_ratio": "\(settings.sampleRatio)"])
                return tracing
            } catch {
                throw CLIFailure(.usage, "\(configuration.config): tracing: \(error)")
            }
        }
    }

    /// The file's server settings with `--host`, `--port` and `--admin-port` applied.
    private func listenerSettings(_ configured: ServerSettings) throws -> ServerSettings {
        var server = configured
        if let host { server.host = host }
        if let port {
            guard (0...65535).contains(port) else { throw CLIFailure(.usage, "--port must be 0 to 65535") }
            server.port = port
        }
        if let adminPort {
            guard (0...65535).contains(adminPort) else { throw CLIFailure(.usage, "--admin-port must be 0 to 65535") }
            server.admin = server.admin ?? AdminListener()
            server.admin?.port = adminPort
        }
        return server
    }

    private func openAuditLog(_ generation: GatewayGeneration, logger: Logger) throws -> AuditLog {
        do {
            return try AuditLog(generation.configuration.audit, logger: logger)
        } catch {
            throw CLIFailure(.usage, "\(configuration.config): \(error)")
        }
    }

    /// The Redis store of `sharedState:`, or nil for a gateway alone.
    private func connectSharedState(
        _ generation: GatewayGeneration, metrics: GatewayMetrics, eventLoops: any EventLoopGroup, logger: Logger
    ) throws -> SharedState? {
        let sharedState: SharedState?
        do {
            sharedState = try generation.configuration.sharedState.map {
                try SharedState.redis($0, metrics: metrics, eventLoopGroup: eventLoops, logger: logger)
            }
        } catch {
            throw CLIFailure(.usage, "\(configuration.config): sharedState.redis: \(error)")
        }
        if let settings = sharedState?.settings {
            logger.notice(
                "sharing tokens, mint locks, rate limits and ended contexts on Redis",
                metadata: ["redis": "\(settings.redis.redactedURL)", "replicas": "\(settings.replicas)"])
        }
        return sharedState
    }

    /// The public listener and, when configured, the admin one; each prints its address on standard output once it
    /// listens (one line, for scripts and tests that started us on port 0).
    private func listeners(
        service: TokenService, exporter: MetricsExporter, server: ServerSettings, eventLoops: any EventLoopGroup, logger: Logger
    ) throws -> [any Service] {
        let host = server.host
        let scheme = server.tls == nil ? "http" : "https"
        let application = try GatewayApplication.make(service: service, server: server, eventLoopGroup: eventLoops, logger: logger) { port in
            FileHandle.standardOutput.write(Data("tokengate listening on \(scheme)://\(host):\(port)\n".utf8))
        }
        var services: [any Service] = [Listener(application: application, host: server.host, port: server.port)]
        if let admin = server.admin {
            let application = GatewayApplication.makeAdmin(
                service: service, exporter: exporter, admin: admin, idleTimeout: server.idleTimeout, readTimeout: server.readTimeout,
                eventLoopGroup: eventLoops, logger: logger
            ) { port in
                FileHandle.standardOutput.write(Data("tokengate admin listening on http://\(admin.host):\(port)\n".utf8))
            }
            services.append(Listener(application: application, host: admin.host, port: admin.port))
        }
        return services
    }

    /// Runs `services` until SIGTERM or SIGINT, with the pid file written for as long; a listener that cannot bind
    /// is said as the configuration error it is.
    private func serve(_ services: [any Service], sharedState: SharedState?, logger: Logger) async throws {
        let group = ServiceGroup(configuration: .init(services: services, gracefulShutdownSignals: [.sigterm, .sigint], logger: logger))
        try writePIDFile()
        defer { if let pidFile { try? FileManager.default.removeItem(atPath: pidFile) } }
        do {
            try await group.run()
            await sharedState?.shutdown()
        } catch let error as ListenerFailure {
            await sharedState?.shutdown()
            // Before the listener is up, a socket error is the address (busy, not ours, not allowed): a
            // configuration error, said in one line rather than as NIO's error.
            guard let failure = Self.listenFailure(error.underlying, host: error.host, port: error.port) else { throw error.underlying }
            throw failure
        }
    }

    /// `cannot listen on HOST:PORT: REASON`, when `error` is why the server could not bind.
    static func listenFailure(_ error: any Error, host: String, port: Int) -> CLIFailure? {
        let reason: String
        switch error {
        case let error as IOError:
            switch error.errnoCode {
            case EADDRINUSE: reason = "address already in use"
            case EADDRNOTAVAIL: reason = "address not available on this host"
            case EACCES: reason = "permission denied"
            default:
                let text = String(cString: strerror(error.errnoCode))
                reason = text.prefix(1).lowercased() + text.dropFirst()
            }
        case is SocketAddressError:
            reason = "no such host or address"
        default:
            return nil
        }
        let address = host.contains(":") ? "[\(host)]" : host
        return CLIFailure(.usage, "cannot listen on \(address):\(port): \(reason)")
    }

    private func writePIDFile() throws(CLIFailure) {
        guard let pidFile else { return }
        guard FileManager.default.createFile(atPath: pidFile, contents: Data("\(getpid())\n".utf8)) else {
            throw CLIFailure(.usage, "cannot write the pid file \(pidFile)")
        }
    }

    /// One line per provider at start, the configuration's warnings, and a loud warning for the published demo key.
    private func logProviders(_ generation: GatewayGeneration, logger: Logger) {
        for warning in generation.warnings { logger.warning("configuration: \(warning)") }
        let demoDigest = try? Digest.sha256(Array(Self.demoAPIKey.utf8))
        for (id, runtime) in generation.providers.sorted(by: { $0.key < $1.key }) {
            let settings = runtime.settings
            logger.info(
                "provider loaded",
                metadata: [
                    "provider": "\(id)", "backend": "\(settings.backendType)",
                    "token_types": "\(runtime.backend.tokenTypes.sorted().map(\.rawValue).joined(separator: ","))",
                    "clients": "\(settings.clients.count)",
                ])
            for client in settings.clients {
                if case .apiKey(let digest) = client.credential, digest == demoDigest {
                    logger.warning(
                        "DEMO CONFIGURATION: client '\(client.name)' of provider \(id) accepts the published demo API key '\(Self.demoAPIKey)'. Never use it in production."
                    )
                }
            }
        }
    }

    /// Raises the open-file limit as far as allowed, then makes the connection caps fit under it: the public
    /// listener's `maxConnections`, the admin listener's own cap, and a reserve of descriptors for everything
    /// else (key files, JWKS and upstream calls, Redis, the audit log). Connections past a cap are refused at once;
    /// connections past the descriptor limit would fail every accept and leave nothing for the rest. When the limit
    /// is too low, the public cap is lowered to fit, loudly; when even the admin cap and the reserve do not fit, the
    /// gateway refuses to start.
    private func fitConnectionsToFileDescriptorLimit(_ server: inout ServerSettings, logger: Logger) throws {
        guard let (soft, hard) = FileDescriptorLimit.raiseToHardLimit() else { return }
        logger.info("open-file limit", metadata: ["soft": "\(soft)", "hard": "\(hard)"])
        let admin = UInt64(server.admin?.maxConnections ?? 0)
        let reserve = UInt64(Self.reservedFileDescriptors)
        guard soft < UInt64(server.maxConnections) + admin + reserve else { return }
        let fitting = soft > admin + reserve ? soft - admin - reserve : 0
        guard fitting >= UInt64(Self.fewestConnections) else {
            throw CLIFailure(
                .usage,
                "the open-file limit (\(soft), hard limit \(hard)) cannot hold server.admin.maxConnections (\(admin)), "
                    + "\(reserve) descriptors for the gateway's own files and calls, and \(Self.fewestConnections) public connections; "
                    + "raise the hard limit (LimitNOFILE= under systemd, ulimit -Hn) or lower server.admin.maxConnections")
        }
        logger.warning(
            """
            server.maxConnections lowered from \(server.maxConnections) to \(fitting) to fit the open-file limit (\(soft), hard limit \(hard)) \
            beside server.admin.maxConnections (\(admin)) and \(reserve) descriptors for the gateway's own files and calls; \
            raise the hard limit (LimitNOFILE= under systemd, ulimit -Hn) to allow more
            """)
        server.maxConnections = Int(fitting)
    }

    /// Descriptors kept free of connections: key and audit files, JWKS, authorizer and upstream calls, Redis.
    static let reservedFileDescriptors = 256
    /// The fewest public connections worth starting with.
    static let fewestConnections = 64

    /// The demo API key of the bundled config.yaml, published in the README.
    static let demoAPIKey = "tg_demo_not_a_secret"
}

/// One listener (the public or the admin one) as a service whose failure says which address it was for.
private struct Listener<Application: Service>: Service {
    let application: Application
    let host: String
    let port: Int

    func run() async throws {
        do {
            try await application.run()
        } catch {
            throw ListenerFailure(host: host, port: port, underlying: error)
        }
    }
}

/// Why a listener stopped, with the address it was for.
private struct ListenerFailure: Error {
    let host: String
    let port: Int
    let underlying: any Error
}
