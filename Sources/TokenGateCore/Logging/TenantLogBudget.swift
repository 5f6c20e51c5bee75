package import Logging
import Synchronization

/// Bounds how much of the log each tenant's lines may take, so one tenant's flood (of ends, events, failing mints)
/// cannot drown the others' lines: every line that names a `provider` (in its metadata or its logger's) is taken
/// from that provider's budget, `rate` a second with bursts of `burst`; past it the line is counted instead, and
/// once lines pass again one warning says how many were left out. Lines without a provider are never held back.
///
/// Wraps the log handler: `serve` wraps the process's, and a test's gateway its logger.
package final class TenantLogBudget: Sendable {
    /// 20 lines a second per tenant, 200 at once: an operator reads every line of a normal day, and a flood of any
    /// one tenant leaves the log to the others.
    package static let defaultLimit = RateLimit(count: 20, per: .seconds(1), burst: 200)

    private struct State {
        var suppressed: [String: Int] = [:]
    }

    private let limiter: RateLimiter<String>
    private let state = Mutex(State())

    /// A budget of `limit` per provider.
    package init(limit: RateLimit = defaultLimit, clock: TokenGateClock = .system) {
        limiter = RateLimiter(limit: limit, maxKeys: 10_000, clock: clock)
    }

    /// `logger` with every line that names a provider taken from this budget.
    package func wrap(_ logger: Logger) -> Logger {
        let handler = Handler(wrapped: logger.handler, budget: self)
        return Logger(label: logger.label, factory: { _ in handler })
    }

    /// Whether a line of `provider` may be written now; when it may after lines were held back, how many were.
    fileprivate func admit(_ provider: String) -> (admitted: Bool, heldBack: Int) {
        guard limiter.acquire(provider).isAllowed else {
            state.withLock { $0.suppressed[provider, default: 0] += 1 }
            return (false, 0)
        }
        let heldBack = state.withLock { $0.suppressed.removeValue(forKey: provider) ?? 0 }
        return (true, heldBack)
    }

    private struct Handler: LogHandler {
        var wrapped: any LogHandler
        let budget: TenantLogBudget

        var metadata: Logger.Metadata {
            get { wrapped.metadata }
            set { wrapped.metadata = newValue }
        }

        var logLevel: Logger.Level {
            get { wrapped.logLevel }
            set { wrapped.logLevel = newValue }
        }

        var metadataProvider: Logger.MetadataProvider? {
            get { wrapped.metadataProvider }
            set { wrapped.metadataProvider = newValue }
        }

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { wrapped[metadataKey: key] }
            set { wrapped[metadataKey: key] = newValue }
        }

        func log(event: LogEvent) {
            guard let provider = event.metadata?["provider"] ?? wrapped.metadata["provider"] else { return wrapped.log(event: event) }
            let (admitted, heldBack) = budget.admit("\(provider)")
            guard admitted else { return }
            if heldBack > 0 {
                var notice = event
                notice.level = .warning
                notice.message = "log lines of this provider held back: over its share of the log (server.logBudget)"
                notice.metadata = ["provider": provider, "held_back": "\(heldBack)"]
                wrapped.log(event: notice)
            }
            wrapped.log(event: event)
        }
    }
}
