import Logging
import ServiceLifecycle
import TokenGateCore
import UnixSignals

/// SIGHUP reloads the configuration (`tokengate reload`, `systemctl reload` and `docker kill --signal HUP` send it).
/// The signal is the executable's business: Core offers ``GatewayReloader/requestReload(trigger:)`` and traps nothing.
struct ReloadOnHangup: Service {
    /// The reloader asked on each SIGHUP.
    let reloader: GatewayReloader
    let logger: Logger

    func run() async {
        await cancelWhenGracefulShutdown {
            for await _ in await UnixSignalsSequence(trapping: .sighup) { reloader.requestReload(trigger: "SIGHUP") }
            // A service that returns ends the group: a signal source that ends on its own must not take the file watch
            // and the reloads with it.
            guard !Task.isCancelled else { return }
            logger.warning("SIGHUP no longer reaches the reloader: only a watched file change reloads from now on")
            while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
        }
    }
}
