package import AsyncHTTPClient
import OutboundHTTP
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
/// The backend takes the gateway's one `HTTPClient`, made with `OutboundExchange.clientConfiguration()`: redirects
/// disallowed (the backend also refuses any 3xx itself) and no silent connection retries inside the client, so this
/// backend's retry budget is the only one.
package struct UpstreamTokenServerFactory: TokenBackendFactory {
    package let type = "upstream-http"

    let httpClient: HTTPClient
    let timing: RetryTiming

    /// Creates the factory over the gateway's shared HTTP client.
    package init(httpClient: HTTPClient) {
        self.init(httpClient: httpClient, timing: .live)
    }

    init(httpClient: HTTPClient, timing: RetryTiming) {
        self.httpClient = httpClient
        self.timing = timing
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
