import JOSE

/// What one acceptance check of one token type found.
package struct AcceptanceOutcome: Sendable, Equatable {
    /// Fleet Engine's verdict on the tenant's token, as far as the check could tell.
    package enum Verdict: String, Sendable, CaseIterable {
        /// Authenticated and authorised: Fleet Engine answered 404 (no such resource, which it says only after
        /// both checks passed) or 200.
        case accepted
        /// Refused: 401 (the token itself: signature, key, audience, lifetime) or 403 (the account's role in the
        /// project, or the claim).
        case refused
        /// No verdict: no token was minted, Fleet Engine did not answer, or answered something else (429, 5xx).
        case unknown
    }

    /// The verdict.
    package var verdict: Verdict
    /// Fleet Engine's HTTP status, when it answered.
    package var status: Int?
    /// Google's error status word (`PERMISSION_DENIED`, `UNAUTHENTICATED`), when it gave one.
    package var googleStatus: String?
    /// What happened, one sentence safe to log and show on the admin listener: Google's message (printable ASCII,
    /// clipped), or why there was no verdict. Never the token.
    package var detail: String

    /// The outcome of Fleet Engine's answer `response`.
    package init(response: FleetEngineResponse) {
        status = response.status
        var message: String?
        if case .object(let object)? = try? JSON.parse(response.body), case .object(let error)? = object["error"] {
            googleStatus = error["status"]?.stringValue.flatMap(Self.statusWord)
            message = error["message"]?.stringValue.map(Self.clipped)
        }
        switch response.status {
        case 200, 404:
            verdict = .accepted
            detail = response.status == 200 ? "the resource exists and the token reads it" : "authenticated and authorised (no such resource)"
        case 401, 403:
            verdict = .refused
            detail = message ?? (response.status == 401 ? "the token was not accepted" : "permission denied")
        default:
            verdict = .unknown
            detail = "Fleet Engine answered \(response.status)" + (message.map { ": \($0)" } ?? "")
        }
    }

    /// No verdict, for `reason`.
    package init(unknown reason: String) {
        verdict = .unknown
        detail = reason
    }

    /// `404 (NOT_FOUND)`, `403 PERMISSION_DENIED`, or the failure: a short form for logs and reasons.
    package var summary: String {
        guard let status else { return detail }
        return googleStatus.map { "\(status) \($0)" } ?? "\(status)"
    }

    /// A Google status word: upper-case letters and underscores, or nothing.
    private static func statusWord(_ text: String) -> String? {
        guard (1...40).contains(text.utf8.count), text.utf8.allSatisfy({ $0 == UInt8(ascii: "_") || (65...90).contains($0) }) else { return nil }
        return text
    }

    /// `text` as printable ASCII (anything else becomes `?`), at most 200 characters.
    static func clipped(_ text: String) -> String {
        var output = ""
        for scalar in text.unicodeScalars {
            guard output.unicodeScalars.count < 200 else { return output + "…" }
            output.unicodeScalars.append((0x20...0x7E).contains(scalar.value) ? scalar : "?")
        }
        return output
    }
}
