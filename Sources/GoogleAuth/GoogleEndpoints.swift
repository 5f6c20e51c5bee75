/// Where Google's services are, overridable for tests and private endpoints.
package struct GoogleEndpoints: Sendable {
    /// The OAuth token endpoint for `authorized_user` files, which carry none (service-account files name their
    /// own `token_uri`). `https://`, or `http://` to a loopback host only.
    package var oauthToken = "https://oauth2.googleapis.com/token"
    /// The metadata server's `host[:port]`, always plain HTTP as Google serves it. `nil`: `GCE_METADATA_HOST` from
    /// the environment, else `metadata.google.internal`.
    package var metadataHost: String?
    /// How long one token fetch may take, its retries and every request of it included.
    package var fetchTimeout: Duration = .seconds(10)

    /// Google's own endpoints, or these.
    package init(
        oauthToken: String = "https://oauth2.googleapis.com/token",
        metadataHost: String? = nil,
        fetchTimeout: Duration = .seconds(10)
    ) {
        self.oauthToken = oauthToken
        self.metadataHost = metadataHost
        self.fetchTimeout = fetchTimeout
    }
}
