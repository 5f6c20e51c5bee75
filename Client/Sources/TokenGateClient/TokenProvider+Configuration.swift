public import Foundation

extension TokenProvider {
    /// Where the gateway is and how the provider caches and retries.
    ///
    /// ```swift
    /// let configuration = TokenProvider.Configuration(
    ///     baseURL: URL(string: "https://tokens.example.com")!, providerID: "acme-rides")
    /// ```
    public struct Configuration: Sendable {
        /// The gateway's base URL, e.g. `https://tokens.example.com` or `http://127.0.0.1:8080` in tests; a path
        /// prefix is kept (`https://api.example.com/tokengate` asks `…/tokengate/v1/providers/…`).
        public var baseURL: URL
        /// The provider (tenant) ID: the Google Cloud project ID the gateway serves tokens for.
        public var providerID: String
        /// The body shape the gateway's provider is configured with. Default ``TokenResponseFormat/tokenGate``.
        public var responseFormat: TokenResponseFormat
        /// A cached token is handed out only while it has more than this many seconds left. Default 300 (the iOS
        /// SDK asks for at least 5 minutes of life); below it callers wait for a fresh token.
        public var refreshMargin: TimeInterval
        /// The most contexts cached at once; the least recently used is dropped beyond it. Default 4, minimum 1.
        public var maximumContexts: Int
        /// Backoff for network errors, 5xx and 429. Default ``RetryPolicy/default``.
        public var retryPolicy: RetryPolicy
        /// After a failed fetch, seconds before the context is asked for again while its cached token can be served
        /// (above the margin, or with ``minimumRemaining`` left). Default 30.
        public var backgroundRetryInterval: TimeInterval
        /// When a fetch fails for any reason but the gateway's refusal (400, 401, 403, 404, 410), a cached token with at
        /// least this many seconds left is returned instead of the error. Default 120, as the browser and Android
        /// clients.
        public var minimumRemaining: TimeInterval

        /// A configuration; every parameter after `providerID` has the default documented on its property.
        public init(
            baseURL: URL, providerID: String, responseFormat: TokenResponseFormat = .tokenGate,
            refreshMargin: TimeInterval = 300, maximumContexts: Int = 4, retryPolicy: RetryPolicy = .default,
            backgroundRetryInterval: TimeInterval = 30, minimumRemaining: TimeInterval = 120
        ) {
            self.baseURL = baseURL
            self.providerID = providerID
            self.responseFormat = responseFormat
            self.refreshMargin = max(0, refreshMargin)
            self.maximumContexts = max(1, maximumContexts)
            self.retryPolicy = retryPolicy
            self.backgroundRetryInterval = max(0, backgroundRetryInterval)
            self.minimumRemaining = max(0, minimumRemaining)
        }
    }
}
