/// Sizes past which a request is refused before any lookup or crypto runs.
public struct RequestLimits: Sendable {
    /// The longest request target (path and query), bytes.
    public var maxTargetBytes = 2048
    /// The longest `Authorization` header value, bytes: a session JWT is a few KiB at most.
    public var maxAuthorizationBytes = 8192
    /// The longest single query value, bytes; context IDs are at most 64 characters.
    public var maxQueryValueBytes = 128
    /// The most query parameters.
    public var maxQueryParameters = 8

    /// The defaults.
    public init() {}
}
