public import Foundation

/// A failure to obtain a Fleet Engine token, classified from the gateway's status and stable error code.
///
/// Errors are equal when their codes are equal, so tests and apps branch on `code`, never on message text:
///
/// ```swift
/// do { token = try await provider.token(for: .trip(tripID)) }
/// catch let error as TokenGateClientError where error.code == .unauthenticated { showSignIn() }
/// ```
public struct TokenGateClientError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong; codes can be added without breaking apps that switch with a `default`.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        fileprivate enum Base: String {
            case unauthenticated, forbidden, rateLimited, backendUnavailable, network, invalidResponse
            case invalidRequest, notFound, noTokenForContext, contextEnded, credentialUnavailable
        }
        fileprivate let base: Base

        /// 401: the app's credential was refused. Re-authenticate the user: the provider tried once more only if the
        /// credential source had another credential to give.
        public static let unauthenticated = Code(base: .unauthenticated)
        /// 403: the user is not allowed a token for this trip or vehicle. Never retried.
        public static let forbidden = Code(base: .forbidden)
        /// 429: the gateway limits this caller; `retryAfter` says when to come back (the provider does not ask for the
        /// context before then).
        public static let rateLimited = Code(base: .rateLimited)
        /// 5xx: the gateway or its token backend failed or timed out (`serverCode` says which).
        public static let backendUnavailable = Code(base: .backendUnavailable)
        /// The request never got an HTTP response (offline, DNS, TLS, connection refused, timeout).
        public static let network = Code(base: .network)
        /// The gateway answered something this client cannot use (body, shape, unexpected status).
        public static let invalidResponse = Code(base: .invalidResponse)
        /// 400, or a request this client refuses to send (an empty context ID).
        public static let invalidRequest = Code(base: .invalidRequest)
        /// 404: unknown provider or token type: a configuration mistake in the app or the gateway.
        public static let notFound = Code(base: .notFound)
        /// 404 with the gateway's code `no_token_for_context`: the provider issues this token type, but its token
        /// source (a file of pre-issued tokens) holds none for this trip or vehicle. Not retried: it stays so until
        /// an operator adds the token; the app may ask again later, e.g. when the user retries.
        public static let noTokenForContext = Code(base: .noTokenForContext)
        /// 410 `context_ended`: an operator ended this trip, vehicle, task or shipment. Never retried, and remembered:
        /// the provider refuses the context without a request until `clear(_:)` or `clearAll()`. Move on, e.g. with
        /// `switchTo` to the next one.
        public static let contextEnded = Code(base: .contextEnded)
        /// The app's credential source threw; `underlying` holds its error.
        public static let credentialUnavailable = Code(base: .credentialUnavailable)

        /// A stable snake-free name for logs, e.g. `rateLimited`.
        public var description: String { base.rawValue }
    }

    /// The classification to branch on.
    public let code: Code
    /// The HTTP status, when the gateway answered.
    public let status: Int?
    /// The gateway's stable code from `{"error":{"code":…}}`, e.g. `backend_timeout`, when it sent one.
    public let serverCode: String?
    /// Seconds to wait before asking again, from `Retry-After` (429, sometimes 503).
    public let retryAfter: TimeInterval?
    /// A sentence for developers and logs; it never contains a token or a credential.
    public let message: String
    /// The transport's or credential source's error, if any.
    public let underlying: (any Error & Sendable)?

    /// Builds an error; apps rarely need this outside tests and custom transports.
    public init(
        code: Code, status: Int? = nil, serverCode: String? = nil, retryAfter: TimeInterval? = nil,
        message: String, underlying: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.status = status
        self.serverCode = serverCode
        self.retryAfter = retryAfter
        self.message = message
        self.underlying = underlying
    }

    /// Whether asking again later can succeed: network failures, 5xx and 429.
    public var isRetryable: Bool {
        switch code.base {
        case .network, .backendUnavailable, .rateLimited: true
        default: false
        }
    }

    /// Whether the gateway said no for this caller and context (400, 401, 403, 404, 410): a token cached for it is no
    /// longer handed out.
    var isRefusal: Bool {
        switch code.base {
        case .invalidRequest, .unauthenticated, .forbidden, .notFound, .noTokenForContext, .contextEnded: true
        default: false
        }
    }

    public var description: String {
        var text = "TokenGateClientError.\(code)"
        if let status { text += " (HTTP \(status)\(serverCode.map { ", \($0)" } ?? ""))" }
        return text + ": " + message
    }

    public static func == (lhs: TokenGateClientError, rhs: TokenGateClientError) -> Bool { lhs.code == rhs.code }
}

extension TokenGateClientError {
    /// Classifies a non-200 gateway response by status, and a 404 also by the body's stable code, keeping that code
    /// and the body's message.
    static func fromResponse(status: Int, body: Data, retryAfter: TimeInterval?) -> TokenGateClientError {
        let (serverCode, serverMessage) = errorBody(body)
        let code: Code
        let advice: String
        switch status {
        case 401:
            (code, advice) = (.unauthenticated, "the gateway refused the app's credential: re-authenticate the user")
        case 403: (code, advice) = (.forbidden, "not allowed: the user may not have a token for this context")
        case 429: (code, advice) = (.rateLimited, "rate limited by the gateway")
        case 400: (code, advice) = (.invalidRequest, "the gateway rejected the request as invalid")
        case 404 where serverCode == noTokenForContextServerCode:
            (code, advice) = (.noTokenForContext, "the gateway's token source holds no token for this context")
        case 404: (code, advice) = (.notFound, "unknown provider or token type")
        case 410: (code, advice) = (.contextEnded, "an operator ended this trip, vehicle, task or shipment: no new tokens for it")
        case 500...599: (code, advice) = (.backendUnavailable, "the gateway or its token backend is unavailable")
        default: (code, advice) = (.invalidResponse, "unexpected HTTP status")
        }
        let message = serverMessage.map { "\(advice) (\($0))" } ?? advice
        return TokenGateClientError(
            code: code, status: status, serverCode: serverCode, retryAfter: retryAfter, message: message)
    }

    /// The gateway's stable code for a 404 that names a missing context rather than a missing provider or type.
    static let noTokenForContextServerCode = "no_token_for_context"

    /// `{"error":{"code":"…","message":"…"}}`, tolerating anything else (a proxy's HTML page).
    private static func errorBody(_ body: Data) -> (code: String?, message: String?) {
        guard let object = try? JSONSerialization.jsonObject(with: body) as? [String: Any],
            let error = object["error"] as? [String: Any]
        else { return (nil, nil) }
        return (error["code"] as? String, error["message"] as? String)
    }

    static func invalidResponse(_ message: String, status: Int? = 200) -> TokenGateClientError {
        TokenGateClientError(code: .invalidResponse, status: status, message: message)
    }
}
