import TokenGateCore

/// Sizes past which a request is refused before any lookup or crypto runs.
package struct RequestLimits: Sendable {
    /// The longest request target (path and query), bytes.
    package var maxTargetBytes = 2048
    /// The longest `Authorization` header value, bytes: a session JWT is a few KiB at most.
    package var maxAuthorizationBytes = 8192
    /// The longest query value once decoded, bytes: a context ID is at most 64 characters of at most four bytes of
    /// UTF-8. A `taskIds` list is bounded by ``maxTargetBytes`` instead.
    package var maxQueryValueBytes = 4 * ContextID.maxLength
    /// The most query parameters.
    package var maxQueryParameters = 8

    /// The defaults.
    package init() {}
}
