/// Sizes past which a request is refused before any lookup or crypto runs.
package struct RequestLimits: Sendable {
    /// The longest request target (path and query), bytes.
    package var maxTargetBytes = 2048
    /// The longest `Authorization` header value, bytes: a session JWT is a few KiB at most.
    package var maxAuthorizationBytes = 8192
    /// The longest single query value, bytes; context IDs are at most 64 characters.
    package var maxQueryValueBytes = 128
    /// The most query parameters.
    package var maxQueryParameters = 8

    /// The defaults.
    package init() {}
}
