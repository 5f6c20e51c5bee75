import Logging

/// Every JWKS URL a generation uses, each with its one ``RemoteKeySet``: two tenants (or a session-token client
/// and a backend) naming the same URL share one set and one fetch schedule. Built by the ``GatewayAssembler``;
/// a reload hands the sets of URLs still in use to the next generation, keys and all.
package final class KeySetDirectory: Sendable {
    /// The key sets by URL.
    package let keySets: [String: RemoteKeySet]

    init(keySets: [String: RemoteKeySet]) {
        self.keySets = keySets
    }

    /// One refresher per key set, to run while the generation serves.
    package var refreshers: [KeySetRefresher] {
        keySets.keys.sorted().compactMap { keySets[$0].map(KeySetRefresher.init) }
    }

    /// Fetches every set that has no keys yet, concurrently; for the command line (which runs no refreshers) and
    /// for a reload, so a provider it adds is ready when it is swapped in.
    package func fetchMissing() async {
        await withTaskGroup(of: Void.self) { group in
            for keySet in keySets.values where keySet.current() == nil {
                group.addTask { await keySet.refresh() }
            }
        }
    }

    /// Collects the URLs of one assembly, reusing the previous generation's set for a URL it already had.
    struct Builder {
        let previous: KeySetDirectory?
        let fetcher: any JWKSFetcher
        let clock: TokenGateClock
        let logger: Logger
        let metrics: GatewayMetrics
        private(set) var keySets: [String: RemoteKeySet] = [:]
        private var intervals: [String: Duration] = [:]

        init(previous: KeySetDirectory?, fetcher: any JWKSFetcher, clock: TokenGateClock, logger: Logger, metrics: GatewayMetrics) {
            self.previous = previous
            self.metrics = metrics
            self.fetcher = fetcher
            self.clock = clock
            self.logger = logger
        }

        /// The one set for `url`; the shortest refresh interval any use asks for wins.
        mutating func keySet(for url: JWKSURL) -> RemoteKeySet {
            intervals[url.url] = min(intervals[url.url] ?? url.refreshInterval, url.refreshInterval)
            if let existing = keySets[url.url] { return existing }
            let keySet = previous?.keySets[url.url] ?? RemoteKeySet(url: url, fetcher: fetcher, clock: clock, logger: logger, metrics: metrics)
            keySets[url.url] = keySet
            return keySet
        }

        /// The directory; the refresh intervals are applied now, when the assembly has succeeded.
        func build() -> KeySetDirectory {
            for (url, keySet) in keySets { keySet.setRefreshInterval(intervals[url] ?? keySet.url.refreshInterval) }
            return KeySetDirectory(keySets: keySets)
        }
    }
}
