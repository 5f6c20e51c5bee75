/// A failure the gateway reports to a caller: a stable code plus an operator-facing reason.
///
/// A struct over a private code enum, so codes can be added without breaking anyone (as `JWTError` and
/// `HTTPClientError` do). Equality is on the code. The HTTP layer is the only place codes become status codes.
public struct TokenGateError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A stable error code: the `error.code` of HTTP bodies, a metric label and a log field.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Base: String, CaseIterable {
            case invalidRequest = "invalid_request"
            case badRequest = "bad_request"
            case requestHeaderFieldsTooLarge = "request_header_fields_too_large"
            case unauthenticated
            case forbidden
            case unknownProvider = "unknown_provider"
            case unknownTokenType = "unknown_token_type"
            case noTokenForContext = "no_token_for_context"
            case notFound = "not_found"
            case methodNotAllowed = "method_not_allowed"
            case originNotAllowed = "origin_not_allowed"
            case rateLimited = "rate_limited"
            case contextEnded = "context_ended"
            case backendInvalidToken = "backend_invalid_token"
            case backendError = "backend_error"
            case backendUnavailable = "backend_unavailable"
            case backendTimeout = "backend_timeout"
            case authorizerUnavailable = "authorizer_unavailable"
            case sharedStateUnavailable = "shared_state_unavailable"
            case endedListFull = "ended_list_full"
            case internalError = "internal_error"
        }
        fileprivate let base: Base

        /// The code as it appears on the wire.
        public var rawValue: String { base.rawValue }
        public var description: String { base.rawValue }

        /// Every code, in a fixed order: metrics and documentation are derived from this list, never a copy of it.
        public static var allCases: [Code] { Base.allCases.map(Code.init(base:)) }

        /// The fixed sentence callers are told for this code. The detailed reason goes to the log only: a caller
        /// without a valid credential must learn nothing about clients, keys or other tenants.
        public var publicMessage: String {
            switch base {
            case .invalidRequest: "the request is malformed"
            case .badRequest: "the HTTP request is malformed"
            case .requestHeaderFieldsTooLarge: "the request's header fields are too large"
            case .unauthenticated: "a valid credential for this provider is required"
            case .forbidden: "this credential may not have that token"
            case .unknownProvider: "no such provider"
            case .unknownTokenType: "this provider does not issue that token type"
            case .noTokenForContext: "no token is available for that context"
            case .notFound: "no such resource"
            case .methodNotAllowed: "this method is not allowed on this resource; see the Allow header"
            case .originNotAllowed: "this origin may not call this provider from a browser"
            case .rateLimited: "too many requests; retry after the time given"
            case .contextEnded: "this trip, vehicle, task or shipment has ended; no new tokens are issued for it"
            case .backendInvalidToken: "the backend produced a token that failed verification"
            case .backendError: "the token backend failed"
            case .backendUnavailable: "the token backend is unavailable"
            case .backendTimeout: "the token backend did not answer in time"
            case .authorizerUnavailable: "the provider's access check could not be completed"
            case .sharedStateUnavailable: "whether this trip, vehicle, task or shipment has ended cannot be checked now; retry shortly"
            case .endedListFull: "this provider's list of ended contexts is full; retry once some have expired"
            case .internalError: "internal error"
            }
        }

        /// The request is malformed: bad IDs, missing or extra parameters, oversized values.
        public static let invalidRequest = Code(base: .invalidRequest)
        /// The HTTP message itself is malformed (the parser refused it, or `Host` is missing or repeated): the
        /// connection is closed after the answer.
        public static let badRequest = Code(base: .badRequest)
        /// A header field, or all of them together, is over the HTTP decoder's limit.
        public static let requestHeaderFieldsTooLarge = Code(base: .requestHeaderFieldsTooLarge)
        /// No credential, or one that is not valid for this provider.
        public static let unauthenticated = Code(base: .unauthenticated)
        /// An authenticated caller asked for a token it may not have.
        public static let forbidden = Code(base: .forbidden)
        /// No provider with that ID.
        public static let unknownProvider = Code(base: .unknownProvider)
        /// The provider does not issue that token type.
        public static let unknownTokenType = Code(base: .unknownTokenType)
        /// The backend holds no token for that context (a file source without one): not worth retrying.
        public static let noTokenForContext = Code(base: .noTokenForContext)
        /// No route has that path.
        public static let notFound = Code(base: .notFound)
        /// The path exists, but not for that method; the answer's `Allow` header lists the methods it has.
        public static let methodNotAllowed = Code(base: .methodNotAllowed)
        /// A CORS preflight from an origin the provider does not list.
        public static let originNotAllowed = Code(base: .originNotAllowed)
        /// A rate limit refused the request; `retryAfter` says for how long.
        public static let rateLimited = Code(base: .rateLimited)
        /// An operator ended the trip, vehicle, task or shipment (`POST …/end` on the admin API): not worth retrying.
        public static let contextEnded = Code(base: .contextEnded)
        /// The backend produced a token that failed verification; it was not cached nor returned.
        public static let backendInvalidToken = Code(base: .backendInvalidToken)
        /// The backend answered with an error or an unusable response.
        public static let backendError = Code(base: .backendError)
        /// The backend could not be reached.
        public static let backendUnavailable = Code(base: .backendUnavailable)
        /// The backend did not answer in time.
        public static let backendTimeout = Code(base: .backendTimeout)
        /// A client's authorizer (the tenant's own access check) did not answer yes or no: a timeout, a connection
        /// error, another status or an unreadable body. Fails closed, never cached.
        public static let authorizerUnavailable = Code(base: .authorizerUnavailable)
        /// With replicas sharing a store: the store cannot be reached (or this replica is not being told of the others'
        /// ends), so whether the context has ended cannot be checked, and it is refused rather than served unchecked
        /// (`sharedState.uncheckedContexts: refuse`).
        public static let sharedStateUnavailable = Code(base: .sharedStateUnavailable)
        /// An end was refused: the provider's list of ended contexts holds `endedContexts.maxEntries` that have not
        /// expired, and none is dropped before its time (that would serve its context again). Nothing was changed.
        public static let endedListFull = Code(base: .endedListFull)
        /// A bug: never expected in operation.
        public static let internalError = Code(base: .internalError)
    }

    /// The stable code.
    public let code: Code
    /// What went wrong, for operators. Never a token or a secret.
    public let reason: String
    /// For `rate_limited` (and backends that say so): whole seconds until a retry may succeed.
    public let retryAfterSeconds: Int?
    /// For `rate_limited` by a provider, caller or context limit: what the answer says about the limits.
    package private(set) var rateLimitHeaders: RateLimitHeaders?
    /// For an `invalid_request` that refused an ID: which field held it and the rule it broke, which the caller is
    /// told in that refusal's fixed sentence instead of the code's (``publicMessage``).
    public let refusedID: ContextID.Refusal?

    /// Creates an error.
    public init(_ code: Code, _ reason: String, retryAfterSeconds: Int? = nil) {
        self.code = code
        self.reason = reason
        self.retryAfterSeconds = retryAfterSeconds
        refusedID = nil
    }

    /// `invalid_request` for an ID that breaks Fleet Engine's rule; `reason` (for the log) is the refusal's sentence
    /// unless given.
    public init(refusing refusal: ContextID.Refusal, reason: String? = nil) {
        code = .invalidRequest
        self.reason = reason ?? refusal.description
        retryAfterSeconds = nil
        refusedID = refusal
    }

    /// `invalid_request` for parameters that name no context (an ID refused, or the wrong parameters for the type).
    public init(_ error: ContextError) {
        if case .invalidID(let refusal) = error {
            self.init(refusing: refusal)
        } else {
            self.init(.invalidRequest, error.description)
        }
    }

    /// What the caller is told: the code's fixed sentence, or for a refused ID the fixed sentence naming its field
    /// and rule. Never the request's own text.
    public var publicMessage: String { refusedID?.description ?? code.publicMessage }

    /// This error, answered with `headers`.
    func withRateLimitHeaders(_ headers: RateLimitHeaders?) -> TokenGateError {
        var error = self
        error.rateLimitHeaders = headers
        return error
    }

    public var description: String { "\(code): \(reason)" }

    public static func == (lhs: TokenGateError, rhs: TokenGateError) -> Bool { lhs.code == rhs.code }
}
