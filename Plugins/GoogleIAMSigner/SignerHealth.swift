import Synchronization
import TokenGateCore

/// What the IAM signer has learned about whether it can sign: an access token obtained or not, and which
/// accounts IAM refuses it. Read by `/readyz`; written by every IAM call and the background probe.
final class SignerHealth: Sendable {
    private struct State {
        var hasAccessToken = false
        var lastCredentialsFailure: String?
        /// Accounts IAM answered 403 for, with Google's message; cleared by the next success.
        var forbidden: [String: String] = [:]
        /// Accounts a signature was obtained for since start.
        var signed: Set<String> = []
        /// Why the last question to IAM about an account not yet answered failed.
        var unanswered: [String: String] = [:]
    }

    private let state = Mutex(State())
    let credentialsSummary: String
    /// The accounts IAM must have answered for (signed, or refused) before the provider is ready.
    let accounts: [String]

    init(credentialsSummary: String, accounts: [String]) {
        self.credentialsSummary = credentialsSummary
        self.accounts = accounts
    }

    func obtainedAccessToken() {
        state.withLock {
            $0.hasAccessToken = true
            $0.lastCredentialsFailure = nil
        }
    }

    func credentialsFailed(_ reason: String) { state.withLock { $0.lastCredentialsFailure = reason } }

    func signed(as account: String) {
        state.withLock {
            $0.hasAccessToken = true
            $0.forbidden[account] = nil
            $0.signed.insert(account)
        }
    }

    func forbidden(_ account: String, message: String) { state.withLock { $0.forbidden[account] = message } }

    /// A question to IAM about `account` got no answer (unavailable, timed out).
    func unanswered(_ account: String, reason: String) { state.withLock { $0.unanswered[account] = reason } }

    /// Whether IAM refused `account` last time.
    func isForbidden(_ account: String) -> Bool { state.withLock { $0.forbidden[account] != nil } }

    /// The accounts IAM refuses now.
    var forbiddenAccounts: [String] { state.withLock { $0.forbidden.keys.sorted() } }

    /// Why the signer cannot serve now; each reason names what to fix.
    var readiness: BackendReadiness {
        state.withLock { state in
            // A question not answered yet, with no failure seen, is a start in progress; once it failed, not ready.
            var notReady: [String] = []
            var starting: [String] = []
            if !state.hasAccessToken {
                let reason = "no access token yet from \(credentialsSummary)"
                if let failure = state.lastCredentialsFailure {
                    notReady.append("\(reason): \(failure)")
                } else {
                    starting.append(reason)
                }
            }
            for account in accounts {
                if let message = state.forbidden[account] {
                    notReady.append(Self.missingPermission(account: account, message: message))
                } else if state.hasAccessToken, !state.signed.contains(account) {
                    let reason = "not yet known whether IAM lets the gateway sign as \(account)"
                    if let failure = state.unanswered[account] {
                        notReady.append("\(reason): \(failure)")
                    } else {
                        starting.append(reason)
                    }
                }
            }
            return BackendReadiness(notReady: notReady, starting: starting)
        }
    }

    /// The commonest mistake, said plainly: the gateway's own identity lacks Service Account Token Creator.
    static func missingPermission(account: String, message: String) -> String {
        "IAM refuses iam.serviceAccounts.signJwt on \(account) (\(message)): grant the gateway's identity "
            + "roles/iam.serviceAccountTokenCreator on \(account)"
    }
}
