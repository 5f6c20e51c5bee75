import AsyncHTTPClient
import Foundation
import GoogleAuth
import JOSE
import NIOCore
import NIOHTTP1
import OutboundHTTP
import Synchronization
import TokenGateCore

/// Google's IAM Service Account Credentials API, `signJwt` only: a service account's Google-managed key signs a
/// JWT's claims, and the key never leaves Google.
///
/// `POST {base}/v1/projects/-/serviceAccounts/{account}:signJwt` with `{"payload": "<claims JSON>", "delegates":
/// [...]}`, answered `{"keyId", "signedJwt"}` (REST reference: cloud.google.com/iam/docs/reference/credentials/rest).
/// A 429, a 5xx or a connection failure is retried with backoff and jitter inside the call's deadline; a 403
/// (the caller may not sign as that account) and every other 4xx are final.
struct IAMCredentialsClient: Sendable {
    /// What a refused call means, for readiness and the caller's error.
    enum Failure: Error, Sendable {
        /// IAM refused the permission (403): nothing will change until an operator grants it.
        case forbidden(account: String, message: String)
        /// IAM or the credentials could not be had within the deadline, or kept failing.
        case unavailable(String, retryAfter: Int?)
        /// The deadline passed.
        case timeout
        /// IAM answered something that is not a signed JWT.
        case invalidAnswer(String)
    }

    let client: HTTPClient
    let baseURL: String
    let credentials: any GoogleCredentials
    let delegates: [String]
    /// The project billed and limited for the calls (`x-goog-user-project`): the provider's `quotaProject`, else the
    /// credentials file's.
    let quotaProject: String?
    /// As many attempts as the call's deadline leaves room for; the wait before retry n is `100 ms · 2^(n-1)`, at
    /// most 2 s, times a jitter in 0.5...1, at least IAM's `Retry-After`.
    var retries = RetryPolicy.untilDeadline
    static let maxAnswerBytes = 64 * 1024

    /// The compact JWT IAM signed for `claims` as `account`, before `deadline`, through the one retrying exchange
    /// (``RetryingExchange``): each attempt with a fresh access token, every answer's body read and capped.
    func signJWT(_ claims: JSONObject, as account: String, deadline: ContinuousClock.Instant) async throws(Failure) -> String {
        let body: [UInt8]
        do {
            var request: JSONObject = ["payload": .string(String(decoding: JSON.serialize(.object(claims)), as: UTF8.self))]
            if !delegates.isEmpty { request["delegates"] = .array(delegates.map { .string("projects/-/serviceAccounts/\($0)") }) }
            body = JSON.serialize(.object(request))
        }
        let exchange = RetryingExchange(client: client, retries: retries, maxBodyBytes: Self.maxAnswerBytes)
        return try await exchange.run(
            deadline: deadline,
            expired: { .timeout },
            cancelledWait: .timeout,
            request: { _ throws(Failure) in
                switch await accessToken(before: deadline) {
                case .success(let token): return makeRequest(body: body, account: account, accessToken: token.value)
                case .failure(let failure): throw failure
                }
            },
            classify: { outcome, attempt in Self.classify(outcome, attempt, account: account) }
        )
    }

    /// The credentials' access token, or `.timeout` at `deadline` if it has not come by then. A fetch is shared by
    /// every caller and cannot be cancelled by one, so this caller stops waiting instead; the fetch finishes within
    /// its own bound for the others.
    private func accessToken(before deadline: ContinuousClock.Instant) async -> Result<GoogleAccessToken, Failure> {
        let once = Mutex<CheckedContinuation<Result<GoogleAccessToken, Failure>, Never>?>(nil)
        let credentials = self.credentials
        return await withCheckedContinuation { continuation in
            once.withLock { $0 = continuation }
            let resume: @Sendable (Result<GoogleAccessToken, Failure>) -> Void = { result in
                once.withLock { $0.take() }?.resume(returning: result)
            }
            let timer = Task {
                guard (try? await Task.sleep(until: deadline, clock: .continuous)) != nil else { return }
                resume(.failure(.timeout))
            }
            Task {
                do {
                    resume(.success(try await credentials.accessToken()))
                } catch {
                    resume(.failure(.unavailable("no access token for the IAM call: \(error)", retryAfter: nil)))
                }
                timer.cancel()
            }
        }
    }

    private func makeRequest(body: [UInt8], account: String, accessToken: String) -> HTTPClientRequest {
        var request = HTTPClientRequest(url: "\(baseURL)/v1/projects/-/serviceAccounts/\(account):signJwt")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(accessToken)")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "TokenGate")
        // The quota project is billed for the call, as Google's libraries send it.
        if let quotaProject { request.headers.add(name: "x-goog-user-project", value: quotaProject) }
        request.body = .bytes(ByteBuffer(bytes: body))
        return request
    }

    /// The hook: 429, 5xx and anything that got no usable answer before the deadline are retried (with IAM's
    /// `Retry-After`, reported too); a 200 is the signed JWT, a 403 a missing permission, any other status final.
    static func classify(
        _ outcome: Result<OutboundExchange.Response, OutboundExchange.Failure>, _ attempt: RetryingExchange.Attempt, account: String
    ) -> RetryingExchange.Verdict<String, Failure> {
        let response: OutboundExchange.Response
        switch outcome {
        case .success(let answer):
            response = answer
        case .failure(.redirected):
            // Only a client that follows redirects gets here (the gateway's never does): the answer came from elsewhere.
            return .fail(.unavailable("IAM redirected; redirects are never used", retryAfter: nil))
        case .failure(let failure):
            // No usable answer (no connection, no head or body in time, a body too large or broken): retried while
            // time is left.
            if attempt.isPastDeadline { return .fail(.timeout) }
            var reason = failure.description
            if case .unreachable(let why) = failure { reason = why }
            return .retry(.unavailable("IAM could not be reached (\(reason))", retryAfter: nil), after: nil)
        }
        let status = response.status
        let answer = response.body
        switch status {
        case 200:
            guard case .object(let object)? = try? JSON.parse(answer), case .string(let jwt)? = object["signedJwt"] else {
                return .fail(.invalidAnswer("IAM's answer has no signedJwt"))
            }
            return .done(jwt)
        case 403:
            return .fail(.forbidden(account: account, message: message(answer)))
        case 429, 500...:
            let retryAfter = response.retryAfterSeconds
            return .retry(.unavailable("IAM answered \(status): \(message(answer))", retryAfter: retryAfter), after: response.retryAfter)
        default:
            return .fail(.unavailable("IAM answered \(status): \(message(answer))", retryAfter: nil))
        }
    }

    /// Google's error message (`{"error":{"message"}}`), trimmed; never the request's own text.
    static func message(_ body: [UInt8]) -> String {
        guard case .object(let object)? = try? JSON.parse(body), case .object(let error)? = object["error"],
            case .string(let message)? = error["message"]
        else { return "no error message" }
        // Printable ASCII only and bounded: the message goes to logs and readiness.
        return String(String.UnicodeScalarView(message.unicodeScalars.prefix(300).filter { (0x20...0x7E).contains($0.value) }))
    }
}
