/// When a cached token is due for a refresh.
///
/// Google's client libraries refresh when less than 3 min 45 s is left (`REFRESH_THRESHOLD`, 225 s). A token that
/// lives shorter than that from the start would be "due" at once, forever, so it is used until 10 s before its expiry.
struct RefreshPolicy: Sendable {
    var refreshBefore: Int64 = 225
    var shortLivedMargin: Int64 = 10
    /// After a failed refresh with the old token still valid, callers get the old one for this long before the
    /// next attempt: a failing token server then sees one attempt per second, not one per caller.
    var failedRefreshPause: Int64 = 1

    /// The epoch second from which `token`, received at `receivedAt`, is refreshed.
    func refreshAt(_ token: GoogleAccessToken, receivedAt: Int64) -> Int64 {
        if token.expiresAt - receivedAt > refreshBefore { return token.expiresAt - refreshBefore }
        return token.expiresAt - shortLivedMargin
    }

    /// Whether `token` may still be handed out at `now` (a failed refresh falls back to it).
    func isUsable(_ token: GoogleAccessToken, now: Int64) -> Bool {
        now < token.expiresAt - shortLivedMargin
    }
}
