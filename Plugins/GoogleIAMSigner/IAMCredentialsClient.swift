import AsyncHTTPClient
import Foundation
import GoogleAuth
import JOSE
import NIOCore
import NIOHTTP1
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
    /// The delay before retry n is `initialBackoff · 2^(n-1)`, at most `maxBackoff`, times a jitter in 0.5...1.
    var initialBackoff: Duration = .milliseconds(100)
    var maxBackoff: Duration = .seconds(2)
    static let maxAnswerBytes = 64 * 1024

    /// The compact JWT IAM signed for `claims` as `account`, before `deadline`.
    func signJWT(_ claims: JSONObject, as account: String, deadline: ContinuousClock.Instant) async throws(Failure) -> String {
        let body: [UInt8]
        do {
            var request: JSONObject = ["payload": .string(String(decoding: JSON.serialize(.object(claims)), as: UTF8.self))]
            if !delegates.isEmpty { request["delegates"] = .array(delegates.map { .string("projects/-/serviceAccounts/\($0)") }) }
            body = JSON.serialize(.object(request))
        }
        var attempts = 0
        while true {
            attempts += 1
            guard ContinuousClock.now < deadline else { throw .timeout }
            let token: GoogleAccessToken
            switch await accessToken(before: deadline) {
            case .success(let fresh): token = fresh
            case .failure(let failure): throw failure
            }
            let outcome = await send(body: body, account: account, accessToken: token.value, deadline: deadline)
            switch outcome {
            case .signed(let jwt):
                return jwt
            case .final(let failure):
                throw failure
            case .retryable(let failure, let retryAfter):
                var delay = initialBackoff * (1 << min(attempts - 1, 20))
                if delay > maxBackoff { delay = maxBackoff }
                delay = delay * Double.random(in: 0.5...1)
                if let retryAfter, .seconds(retryAfter) > delay { delay = .seconds(retryAfter) }
                guard ContinuousClock.now + delay < deadline else { throw failure }
                do { try await Task.sleep(for: delay) } catch { throw .timeout }
            }
        }
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

    private enum Outcome {
        case signed(String)
        case retryable(Failure, retryAfter: Int?)
        case final(Failure)
    }

    private func send(body: [UInt8], account: String, accessToken: String, deadline: ContinuousClock.Instant) async -> Outcome {
        var request = HTTPClientRequest(url: "\(baseURL)/v1/projects/-/serviceAccounts/\(account):signJwt")
        request.method = .POST
        request.headers.add(name: "Authorization", value: "Bearer \(accessToken)")
        request.headers.add(name: "Content-Type", value: "application/json")
        request.headers.add(name: "User-Agent", value: "TokenGate")
        // The quota project is billed for the call, as Google's libraries send it.
        if let quotaProject { request.headers.add(name: "x-goog-user-project", value: quotaProject) }
        request.body = .bytes(ByteBuffer(bytes: body))
        let status: Int
        let answer: [UInt8]
        do {
            let response = try await client.execute(request, deadline: Self.nioDeadline(deadline))
            status = Int(response.status.code)
            answer = Array(try await response.body.collect(upTo: Self.maxAnswerBytes).readableBytesView)
            if status == 429 || status >= 500 {
                let retryAfter = response.headers.first(name: "Retry-After").flatMap { Int($0.trimmingCharacters(in: .whitespaces)) }
                return .retryable(.unavailable("IAM answered \(status): \(Self.message(answer))", retryAfter: retryAfter), retryAfter: retryAfter)
            }
        } catch {
            if ContinuousClock.now >= deadline { return .final(.timeout) }
            return .retryable(.unavailable("IAM could not be reached (\(Self.describe(error)))", retryAfter: nil), retryAfter: nil)
        }
        switch status {
        case 200:
            guard case .object(let object)? = try? JSON.parse(answer), case .string(let jwt)? = object["signedJwt"] else {
                return .final(.invalidAnswer("IAM's answer has no signedJwt"))
            }
            return .signed(jwt)
        case 403:
            return .final(.forbidden(account: account, message: Self.message(answer)))
        default:
            return .final(.unavailable("IAM answered \(status): \(Self.message(answer))", retryAfter: nil))
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

    private static func describe(_ error: any Error) -> String {
        if let error = error as? HTTPClientError { return "\(error)" }
        if let error = error as? IOError { return "I/O error, errno \(error.errnoCode)" }
        return String(describing: type(of: error))
    }

    private static func nioDeadline(_ instant: ContinuousClock.Instant) -> NIODeadline {
        let remaining = instant - ContinuousClock.now
        guard remaining > .zero else { return .now() }
        let (seconds, attoseconds) = remaining.components
        return .now() + .nanoseconds(seconds * 1_000_000_000 + attoseconds / 1_000_000_000)
    }
}
