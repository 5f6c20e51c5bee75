import CoreMetrics
import JOSE

/// Watches one provider's signing keys: each must still be listed among the keys Google publishes for its
/// account (when `keyHealth.checkPublished` is on), and none may be near its configured `expires:` date. What is
/// wrong makes the provider *degraded* in `/readyz`, shows in two gauges the alert rules read, and is reported by
/// `check-config --online`.
///
/// A key Google no longer lists was disabled or deleted: Fleet Engine rejects every token it signs, with a 401 the
/// gateway never sees. Google's lists are fetched through the shared key-set directory (at start, on reload, then
/// every `interval`); a list that could not be fetched says nothing about a key, so it degrades nothing.
final class SigningKeyHealth: Sendable {
    struct Watched: Sendable {
        let key: SigningKey
        /// The account's published keys, when they are checked.
        let published: RemoteKeySet?
        let unpublishedGauge: Gauge?
        let expiryGauge: Gauge?
    }

    /// What is known about one key now.
    enum Finding: Equatable {
        /// Google's list was fetched and lacks the key.
        case unpublished
        case expiring(daysLeft: Int64)
        case expired
    }

    let watched: [Watched]
    let settings: KeyHealthSettings
    private let clock: TokenGateClock

    init(
        provider: ProviderID, keys: [SigningKey], settings: KeyHealthSettings, clock: TokenGateClock, factory: any MetricsFactory,
        keySet: (JWKSURL) -> RemoteKeySet
    ) {
        self.settings = settings
        self.clock = clock
        watched = keys.map { key in
            let dimensions = [("provider", provider.rawValue), ("kid", key.keyID)]
            // Literal labels, one per instrument: scripts/check-deploy reads the exported names from them.
            let unpublishedGauge =
                settings.checkPublished
                ? Gauge(label: "tokengate_signing_key_unpublished", dimensions: dimensions, factory: factory) : nil
            let expiryGauge = key.expiresAt.map { _ in
                Gauge(label: "tokengate_signing_key_expiry_timestamp_seconds", dimensions: dimensions, factory: factory)
            }
            return Watched(
                key: key, published: settings.checkPublished ? keySet(settings.publishedKeys(of: key.serviceAccount)) : nil,
                unpublishedGauge: unpublishedGauge, expiryGauge: expiryGauge)
        }
    }

    /// The findings of every watched key now, worst first per key (unpublished before an expiry).
    func findings() -> [(key: SigningKey, findings: [Finding])] {
        let now = clock.wallSeconds()
        let warning = settings.expiryWarning.components.seconds
        return watched.map { watched in
            var findings: [Finding] = []
            if let keys = watched.published?.current(), !keys.keys.contains(where: { $0.keyID == watched.key.keyID }) {
                findings.append(.unpublished)
            }
            if let expiresAt = watched.key.expiresAt {
                if expiresAt <= now {
                    findings.append(.expired)
                } else if expiresAt - now <= warning {
                    findings.append(.expiring(daysLeft: (expiresAt - now) / 86_400))
                }
            }
            return (watched.key, findings)
        }
    }

    /// Why the provider is degraded, one sentence per problem; empty when every key is healthy.
    var problems: [String] {
        findings().flatMap { key, findings in findings.map { Self.describe($0, key) } }
    }

    /// Sets the gauges to what is known now (called at each scrape).
    func updateGauges() {
        let findings = findings()
        for (watched, found) in zip(self.watched, findings) {
            watched.unpublishedGauge?.record(found.findings.contains(.unpublished) ? 1 : 0)
            if let expiresAt = watched.key.expiresAt { watched.expiryGauge?.record(Double(expiresAt)) }
        }
    }

    /// Fetches Google's lists now (a reload, `check-config --online`), concurrently.
    func refreshPublished() async {
        await withTaskGroup(of: Void.self) { group in
            for set in watched.compactMap(\.published) { group.addTask { _ = await set.refresh() } }
        }
    }

    /// One finding per watched key for `check-config --online`, after fetching Google's lists.
    func checkOnline() async -> [OnlineFinding] {
        await refreshPublished()
        return findings().map { key, findings in
            let subject = "key \(key.keyID) of \(key.serviceAccount)"
            if let problem = findings.first { return OnlineFinding(subject: subject, isOK: false, message: Self.describe(problem, key)) }
            var checked: [String] = []
            if let set = watched.first(where: { $0.key == key })?.published {
                guard set.current() != nil else {
                    return OnlineFinding(
                        subject: subject, isOK: false,
                        message: "Google's keys for the account could not be fetched from \(set.url.url): \(set.lastFailure ?? "no answer")")
                }
                checked.append("listed by Google")
            }
            if let expiresAt = key.expiresAt { checked.append("expires \(RFC3339.format(expiresAt))") }
            let message = checked.isEmpty ? "not checked (no keyHealth)" : checked.joined(separator: "; ")
            return OnlineFinding(subject: subject, isOK: true, message: message)
        }
    }

    private static func describe(_ finding: Finding, _ key: SigningKey) -> String {
        let expiry = key.expiresAt.map(RFC3339.format) ?? "-"
        return switch finding {
        case .unpublished:
            "key_unpublished: key \(key.keyID) of \(key.serviceAccount) is no longer among the keys Google publishes for the account "
                + "(disabled or deleted): Fleet Engine rejects every token it signs; rotate to a live key"
        case .expiring(let days):
            "key_expiring: key \(key.keyID) of \(key.serviceAccount) expires at \(expiry) (in \(days) days); rotate it before then"
        case .expired:
            "key_expired: key \(key.keyID) of \(key.serviceAccount) expired at \(expiry): Fleet Engine rejects every token it signs"
        }
    }
}
