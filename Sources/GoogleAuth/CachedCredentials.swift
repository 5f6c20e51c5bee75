import Foundation
import Logging
import Synchronization

/// `GoogleCredentials` over an `AccessTokenSource`: the token is cached behind a `Mutex`, refreshed ahead of expiry by one
/// shared `Task` that every waiting caller awaits (single flight), and kept when a refresh fails while it is valid.
final class CachedCredentials: GoogleCredentials {
    private struct State {
        var token: GoogleAccessToken?
        var refreshAt: Int64 = .min
        var inFlight: Task<Result<GoogleAccessToken, GoogleAuthError>, Never>?
    }

    let fetcher: any AccessTokenSource
    private let state = Mutex(State())
    private let policy: RefreshPolicy
    private let fetchTimeout: Duration
    private let logger: Logger
    private let onRefresh: @Sendable (Bool) -> Void
    private let now: @Sendable () -> Int64

    var summary: String { fetcher.summary }

    var quotaProject: String? { fetcher.quotaProject }

    init(
        fetcher: any AccessTokenSource, fetchTimeout: Duration, logger: Logger, policy: RefreshPolicy = RefreshPolicy(),
        onRefresh: @escaping @Sendable (Bool) -> Void, now: @escaping @Sendable () -> Int64 = CachedCredentials.systemNow
    ) {
        self.fetcher = fetcher
        self.fetchTimeout = fetchTimeout
        self.logger = logger
        self.policy = policy
        self.onRefresh = onRefresh
        self.now = now
    }

    static let systemNow: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }

    func accessToken() async throws(GoogleAuthError) -> GoogleAccessToken {
        let now = now()
        let step: Step = state.withLock { state in
            if let token = state.token, now < state.refreshAt, policy.isUsable(token, now: now) { return .cached(token) }
            if let inFlight = state.inFlight { return .wait(inFlight, fallback: state.token) }
            // Unstructured on purpose: a caller that is cancelled must not cancel the fetch the others await.
            let task = Task { await self.refresh() }
            state.inFlight = task
            return .wait(task, fallback: state.token)
        }
        switch step {
        case .cached(let token):
            return token
        case .wait(let task, let fallback):
            switch await task.value {
            case .success(let token):
                return token
            case .failure(let error):
                if let fallback, policy.isUsable(fallback, now: self.now()) { return fallback }
                throw error
            }
        }
    }

    private enum Step {
        case cached(GoogleAccessToken)
        case wait(Task<Result<GoogleAccessToken, GoogleAuthError>, Never>, fallback: GoogleAccessToken?)
    }

    /// One fetch; stores its token, or on failure keeps the old one and pauses retries briefly.
    private func refresh() async -> Result<GoogleAccessToken, GoogleAuthError> {
        let started = now()
        let result: Result<GoogleAccessToken, GoogleAuthError>
        do {
            // An executable source may take its own timeout on top of the HTTP calls' bound.
            result = .success(try await fetcher.fetch(deadline: .now + fetchTimeout + fetcher.fetchAllowance))
        } catch {
            result = .failure(error)
        }
        onRefresh(result.isSuccess)
        state.withLock { state in
            state.inFlight = nil
            switch result {
            case .success(let token):
                state.token = token
                state.refreshAt = policy.refreshAt(token, receivedAt: started)
            case .failure:
                state.refreshAt = now() + policy.failedRefreshPause
            }
        }
        switch result {
        case .success(let token):
            logger.debug("google access token refreshed", metadata: ["credentials": "\(summary)", "expiresAt": "\(token.expiresAt)"])
        case .failure(let error):
            logger.warning("google access token refresh failed", metadata: ["credentials": "\(summary)", "reason": "\(error.message)"])
        }
        return result
    }
}

extension Result {
    fileprivate var isSuccess: Bool {
        if case .success = self { true } else { false }
    }
}
