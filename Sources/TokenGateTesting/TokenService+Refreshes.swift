package import TokenGateCore

extension TokenService {
    /// Waits until every refresh-ahead that the generation served now has started so far has finished, so that a
    /// test can count the backend's calls once they are over.
    package func waitForBackgroundRefreshes() async {
        for runtime in generation.providers.values { await runtime.cache.waitForRefreshes() }
    }
}
