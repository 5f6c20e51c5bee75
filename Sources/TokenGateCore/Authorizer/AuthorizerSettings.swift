/// A client's `authorizer:`: the tenant's own backend, asked whether a caller may have a context.
///
/// ```yaml
/// authorizer: { type: http, url: "https://auth.acme.example/can-access?subject={subject}&tripId={tripId}", cacheFor: 60s, timeout: 500ms }
/// ```
///
/// - `type` (required): `http`, the only kind so far.
/// - `url` (required): `https://`, or `http://` to a loopback host only, without credentials; placeholders
///   (``AuthorizerURLTemplate/Placeholder``) in the path and query only, values percent-encoded.
/// - `cacheFor` (duration, default `60s`, `0s` to `24h`): how long an answer, yes or no, is reused for one caller
///   and context; `0s` asks every time.
/// - `timeout` (duration, default `500ms`, `1ms` to `10s`): the whole exchange, body included.
///
/// The answer contract: `200` with the JSON body `{"allowed": true}` allows; `200` with `{"allowed": false}`, or
/// `403` or `404`, denies; anything else (another status, a redirect, a malformed body or one over
/// ``maxBodyBytes``, a timeout, a connection error) is `authorizer_unavailable` and is never cached.
package struct AuthorizerSettings: Sendable, Equatable {
    /// Where the question goes.
    package var url: AuthorizerURLTemplate
    /// How long a yes or a no is reused; zero never caches.
    package var cacheFor: Duration
    /// The deadline of one exchange.
    package var timeout: Duration

    /// `cacheFor` when the configuration gives none.
    package static let defaultCacheFor: Duration = .seconds(60)
    /// The range `cacheFor` may take.
    package static let cacheForRange: ClosedRange<Duration> = .zero...(.seconds(24 * 3600))
    /// `timeout` when the configuration gives none.
    package static let defaultTimeout: Duration = .milliseconds(500)
    /// The range `timeout` may take.
    package static let timeoutRange: ClosedRange<Duration> = .milliseconds(1)...(.seconds(10))
    /// The largest answer body read; the contract's answer is a few bytes.
    package static let maxBodyBytes = 4096

    /// Settings asking `url`.
    package init(url: AuthorizerURLTemplate, cacheFor: Duration = defaultCacheFor, timeout: Duration = defaultTimeout) {
        self.url = url
        self.cacheFor = cacheFor
        self.timeout = timeout
    }
}
