/// A token request as it arrives, before anything is trusted: raw strings from the URL and headers.
package struct TokenQuery: Sendable {
    /// The `{providerId}` path segment.
    package var providerID: String
    /// The `{tokenType}` path segment.
    package var tokenType: String
    /// The query parameters (`tripId`, `vehicleId`, …).
    package var parameters: [String: String]
    /// The raw `Authorization` header, if any.
    package var authorization: String?
    /// The caller's address, for the failed-authentication limit per peer and for logs.
    package var peer: PeerAddress?
    /// The request's ID (the `X-Request-ID` the caller sent when well-formed, else one the gateway made), for logs.
    package var requestID: String?

    /// Creates a query.
    package init(
        providerID: String,
        tokenType: String,
        parameters: [String: String],
        authorization: String?,
        peer: PeerAddress? = nil,
        requestID: String? = nil
    ) {
        self.providerID = providerID
        self.tokenType = tokenType
        self.parameters = parameters
        self.authorization = authorization
        self.peer = peer
        self.requestID = requestID
    }
}

/// A token granted to a caller, with what the response needs to describe it.
package struct TokenGrant: Sendable {
    /// The verified token.
    package var token: DeliveredToken
    /// What it is for.
    package var context: TokenContext
    /// The provider that issued it. Its ID, not its settings: a grant is made for every request served.
    package var providerID: ProviderID
    /// How the cache produced it.
    package var outcome: TokenCacheOutcome
    /// How the provider's response body is written.
    package var format: any TokenBodyWriter
    /// What the answer says about the rate limits the request was charged to, if the provider has any.
    package var rateLimits: RateLimitHeaders? = nil

    /// The response body's length in bytes at `now` (epoch seconds).
    package func bodyByteCount(now: Int64) -> Int { format.byteCount(of: token, context: context, now: now) }

    /// Hands the response body at `now` (epoch seconds) to `sink` in contiguous pieces, in order.
    package func writeBody(now: Int64, to sink: (UnsafeRawBufferPointer) -> Void) {
        format.write(token, context: context, now: now, to: sink)
    }
}
