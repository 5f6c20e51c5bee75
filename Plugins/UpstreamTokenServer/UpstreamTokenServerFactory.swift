package import AsyncHTTPClient
import NIOCore
package import TokenGateCore

/// Builds `upstream-http` backends: tokens come from a token server the provider already runs.
///
/// ```yaml
/// backend:
///   type: upstream-http
///   url: https://tokens.acme.example/{providerId}/{tokenType}?trip={tripId}   # placeholders: path and query only
///   method: GET                 # or POST: JSON body {"providerId","tokenType","context":{"tripId":…}}
///   headers: { X-Api-Key: "${ACME_TOKEN_SERVER_KEY}" }
///   tokenTypes: [consumer, driver]
///   response: { tokenKey: jwt, expiryKey: expirationTimestamp, expiryFormat: epoch-milliseconds }
///   timeouts: { connect: 2s, total: 5s }
///   retries: { maxAttempts: 3, initialBackoff: 100ms, maxBackoff: 2s }
///   maxBodyBytes: 65536
///   verify:
///     - jwksUrl: https://www.googleapis.com/service_accounts/v1/jwk/signer@acme.iam.gserviceaccount.com
///       serviceAccount: signer@acme.iam.gserviceaccount.com
/// ```
///
/// Placeholders: `{providerId}`, `{tokenType}`, `{contextId}` and `{tripId}`, `{vehicleId}`, `{deliveryVehicleId}`,
/// `{trackingId}`, `{taskId}` (empty when the request's context is of another kind); values are percent-encoded.
/// `timeouts.connect` bounds one attempt's connecting and response head (an upstream that accepts and never answers
/// fails there); `timeouts.total` bounds the whole call, retries and body included.
///
/// The gateway creates the shared `HTTPClient` with ``recommendedConfiguration()``: redirects disallowed (the
/// backend also refuses any 3xx itself) and no silent connection retries inside the client, so this backend's retry
/// budget is the only one.
package struct UpstreamTokenServerFactory: TokenBackendFactory {
    package let type = "upstream-http"

    let httpClient: HTTPClient
    let timing: UpstreamTiming

    /// Creates the factory over the gateway's shared HTTP client.
    package init(httpClient: HTTPClient) {
        self.init(httpClient: httpClient, timing: .live)
    }

    init(httpClient: HTTPClient, timing: UpstreamTiming) {
        self.httpClient = httpClient
        self.timing = timing
    }

    /// The client configuration this backend expects: no redirects, no connection retries inside the client,
    /// a 2 s connect timeout, and up to 128 HTTP/1 connections to one host. AsyncHTTPClient's default of 8 made
    /// every plain-HTTP/1 peer a queue: cold mints through IAM at 50 ms a call stopped at about 84 a second
    /// whatever `maxConcurrentSigns` said (over TLS, Google's endpoints speak HTTP/2 and multiplex anyway).
    package static func recommendedConfiguration() -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 128
        configuration.timeout.connect = .seconds(2)
        return configuration
    }

    package func makeBackend(_ context: BackendContext) async throws -> any TokenBackend {
        let settings = try UpstreamSettings.parse(context.section)
        return UpstreamTokenServer(
            provider: context.provider,
            settings: settings,
            caller: UpstreamCaller(client: httpClient, settings: settings, timing: timing, metrics: context.metrics),
            clock: context.clock
        )
    }
}
