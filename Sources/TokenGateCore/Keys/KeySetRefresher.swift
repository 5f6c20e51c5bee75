import ServiceLifecycle

/// The background work of one ``RemoteKeySet``: fetch when the gateway starts (or when the set's last good fetch
/// is due, for a set a reload handed on), then every refresh interval after a success, every
/// ``RemoteKeySet/retryInterval`` after a failure, and at once when a token names an unknown `kid`.
///
/// One per distinct URL in a generation, made by the ``KeySetDirectory``; it ends on cancellation (a reload that
/// swaps its generation out) or graceful shutdown, never on a failed fetch.
package struct KeySetRefresher: Service {
    /// The key set this refresher fills.
    package let keySet: RemoteKeySet

    /// A refresher of `keySet`.
    package init(keySet: RemoteKeySet) {
        self.keySet = keySet
    }

    /// Refreshes until the task is cancelled or the service group shuts down gracefully, then returns.
    package func run() async throws {
        await cancelWhenGracefulShutdown {
            await keySet.withRefresher { await self.refreshUntilCancelled() }
        }
    }

    private func refreshUntilCancelled() async {
        while !Task.isCancelled {
            let delay = keySet.delayBeforeNextFetch(now: keySet.clock.monotonicNanoseconds())
            if delay > .zero {
                await keySet.waitForRefreshRequest(upTo: delay)
                if Task.isCancelled { return }
            }
            await keySet.refresh()
        }
    }
}
