import JOSE
import Logging
import Synchronization

/// Denials logged in aggregate, so a flood of bad requests cannot flood the log (or spend a served token's CPU on
/// logging): the first denial of each provider and code in an interval is logged with its reason; the ones after
/// it are only counted, and the count is logged once the interval is over (by the next denial of that kind, or by
/// ``flush()``, which `serve` calls on a timer).
final class DenialLog: Sendable {
    struct Key: Hashable {
        var provider: String
        var code: TokenGateError.Code
    }

    struct Window {
        var startedAt: UInt64
        var suppressed: Int
    }

    let interval: UInt64
    private let clock: TokenGateClock
    private let logger: Logger
    private let windows = Mutex<[Key: Window]>([:])

    init(interval: Duration = .seconds(10), clock: TokenGateClock, logger: Logger) {
        self.interval = TokenGateClock.nanoseconds(interval)
        self.clock = clock
        self.logger = logger
    }

    /// Logs or counts one denial. `provider` is the validated ID of a provider the generation serves, or nil;
    /// `sent` is what the request named, escaped and truncated, for the first line of its kind only (so a flood of
    /// made-up provider names is one kind, not one line and one table entry each). `requestID` is well-formed (the
    /// HTTP layer checked it), so it is logged as is.
    func record(
        _ error: TokenGateError, provider: ProviderID?, sent: String, type: String, peer: PeerAddress?, requestID: String? = nil
    ) {
        let now = clock.monotonicNanoseconds()
        let key = Key(provider: provider?.rawValue ?? "(unknown)", code: error.code)
        let (logNow, finished) = windows.withLock { windows -> (Bool, Int) in
            // The key is hashed once: a flood of refusals comes through here, one lookup each.
            guard let index = windows.index(forKey: key) else {
                windows[key] = Window(startedAt: now, suppressed: 0)
                return (true, 0)
            }
            let window = windows.values[index]
            if now >= window.startedAt, now - window.startedAt < interval {
                windows.values[index].suppressed += 1
                return (false, 0)
            }
            windows.values[index] = Window(startedAt: now, suppressed: 0)
            return (true, window.suppressed)
        }
        guard logNow else { return }
        if finished > 0 { logSuppressed(finished, key) }
        var metadata: Logger.Metadata = ["code": "\(error.code)"]
        if let peer { metadata["peer"] = "\(peer)" }
        if let requestID, !requestID.isEmpty { metadata["request_id"] = "\(requestID)" }
        metadata["provider"] = "\(sent)"
        metadata["type"] = "\(type)"
        let level: Logger.Level = error.code == .backendInvalidToken || error.code == .internalError ? .error : .info
        logger.log(level: level, "token request denied: \(error.reason)", metadata: metadata)
    }

    /// A refusal before admission, counted on the generation the request read. Only validated values, or escaped
    /// and truncated ones, reach the log and metrics: path segments are attacker text.
    func record(_ error: TokenGateError, _ query: TokenQuery, in serving: Serving) {
        let runtime = serving.pipeline(named: query.providerID)?.runtime
        let type = TokenType(rawValue: query.tokenType)
        if let runtime {
            runtime.metrics.recordDenial(error.code, type: type)
        } else {
            serving.generation.metrics.recordDenialWithoutProvider(error.code, type: type)
        }
        record(
            error, provider: runtime?.id, sent: runtime?.id.rawValue ?? Sanitized.quote(query.providerID),
            type: type?.rawValue ?? Sanitized.quote(query.tokenType), peer: query.peer, requestID: query.requestID)
    }

    /// A refusal after admission, counted on the pipeline that refused it.
    func record(_ error: TokenGateError, _ admission: TokenAdmission) {
        let runtime = admission.pipeline.runtime
        runtime.metrics.recordDenial(error.code, type: admission.type)
        record(
            error, provider: runtime.id, sent: runtime.id.rawValue, type: admission.type.rawValue, peer: admission.query.peer,
            requestID: admission.query.requestID)
    }

    /// Logs the counts of every interval that is over, and forgets those intervals.
    func flush() {
        let now = clock.monotonicNanoseconds()
        let finished = windows.withLock { windows -> [(Key, Int)] in
            var finished: [(Key, Int)] = []
            for (key, window) in windows where now < window.startedAt || now - window.startedAt >= interval {
                finished.append((key, window.suppressed))
                windows[key] = nil
            }
            return finished
        }
        for (key, count) in finished where count > 0 { logSuppressed(count, key) }
    }

    private func logSuppressed(_ count: Int, _ key: Key) {
        logger.info(
            "token requests denied and not logged one by one",
            metadata: ["code": "\(key.code)", "provider": "\(key.provider)", "count": "\(count)"])
    }
}
