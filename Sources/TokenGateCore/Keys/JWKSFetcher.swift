/// Fetches a JWKS document for a `RemoteKeySet`: an identity provider's keys, or a backend's signing keys.
///
/// TokenGateCore has no HTTP client: the HTTP face supplies one (`HTTPJWKSFetcher`: AsyncHTTPClient with a
/// deadline, a body cap and no redirects) and tests supply in-memory ones. Implementations return the body of a
/// successful response and throw for anything else (a status other than 200, a timeout, an oversized body); they
/// never retry, because the key set's `KeySetRefresher` owns the schedule.
///
/// ```swift
/// struct FixedJWKS: JWKSFetcher {
///     let body: [UInt8]
///     func fetchJWKS(from url: String) async throws -> [UInt8] { body }
/// }
/// ```
public protocol JWKSFetcher: Sendable {
    /// The JWKS document at `url` (an `https://` URL, or `http://` on a loopback host), as raw bytes.
    func fetchJWKS(from url: String) async throws -> [UInt8]
}
