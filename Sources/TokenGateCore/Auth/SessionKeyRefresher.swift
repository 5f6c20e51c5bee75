public import Logging
public import ServiceLifecycle

/// The background work of one ``RemoteKeySet``: fetch its JWKS when the gateway starts, then again every
/// `refreshInterval` after a success, every ``RemoteKeySet/retryInterval`` (30 s) after a failure, and at once
/// when a session token names an unknown `kid` (rate-limited by the key set).
///
/// A ServiceLifecycle `Service`, run beside the HTTP server by `serve` (and by `RunningGateway` in tests); it ends
/// on cancellation or graceful shutdown, never on a failed fetch. Get them from
/// ``LoadedConfiguration/sessionKeyRefreshers(fetcher:logger:)``.
///
/// ```swift
/// let refreshers = loaded.sessionKeyRefreshers(fetcher: HTTPJWKSFetcher(), logger: logger)
/// let group = ServiceGroup(configuration: .init(services: [application] + refreshers, logger: logger))
/// ```
public struct SessionKeyRefresher: Service {
    /// The key set this refresher fills.
    public let keySet: RemoteKeySet
    /// Where the JWKS comes from.
    public let fetcher: any JWKSFetcher
    /// Where fetch failures are logged.
    public let logger: Logger

    /// A refresher of `keySet` through `fetcher`.
    public init(keySet: RemoteKeySet, fetcher: any JWKSFetcher, logger: Logger) {
        self.keySet = keySet
        self.fetcher = fetcher
        self.logger = logger
    }

    /// Refreshes until the task is cancelled or the service group shuts down gracefully, then returns.
    public func run() async throws {
        await cancelWhenGracefulShutdown { await self.refreshUntilCancelled() }
    }

    private func refreshUntilCancelled() async {
        while !Task.isCancelled {
            let succeeded = await keySet.refresh(using: fetcher, logger: logger)
            await keySet.waitForRefreshRequest(upTo: succeeded ? keySet.refreshInterval : RemoteKeySet.retryInterval)
        }
    }
}
