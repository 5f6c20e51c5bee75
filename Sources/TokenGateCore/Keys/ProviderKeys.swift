import JOSE
import Synchronization

/// One provider's verification keys at run time: the fixed sets its backend declared and the shared
/// ``RemoteKeySet`` of each URL, every key bound to the service account it signs for.
///
/// ``current()`` merges them (the first source to name a `kid` wins, so a set fetched from a URL can never shadow
/// a key pinned in a file) and keeps the merged set until a remote set changes, so a cache miss does not rebuild it.
package final class ProviderKeys: Sendable {
    enum Part: Sendable {
        case fixed(JWKSet, serviceAccount: String)
        case remote(RemoteKeySet, serviceAccount: String)
    }

    let parts: [Part]
    private let merged: Mutex<(versions: [Int], keys: VerificationKeys)?>
    private let published: Mutex<(versions: [Int], json: [UInt8])?>

    init(parts: [Part]) {
        self.parts = parts
        self.merged = Mutex(nil)
        self.published = Mutex(nil)
    }

    /// The remote sets among the parts.
    var remoteSets: [RemoteKeySet] {
        parts.compactMap { if case .remote(let set, _) = $0 { set } else { nil } }
    }

    /// Whether every URL has delivered a set at least once.
    var haveAllBeenFetched: Bool { remoteSets.allSatisfy { $0.current() != nil } }

    /// The keys to verify with now. Throws `backend_unavailable` when there is no key at all yet (every URL still
    /// unfetched and nothing fixed): no token can be verified, so none is issued.
    package func current() throws(TokenGateError) -> VerificationKeys {
        let snapshots = remoteSets.map { $0.snapshot() }
        let versions = snapshots.map(\.version)
        if let cached = merged.withLock({ $0 }), cached.versions == versions { return cached.keys }
        var keys: [JWSKey] = []
        var issuers: [String: String] = [:]
        var remoteIndex = 0
        func add(_ set: JWKSet, _ serviceAccount: String) {
            for key in set.keys {
                guard let keyID = key.keyID, issuers[keyID] == nil else { continue }
                keys.append(key.publicKey())
                issuers[keyID] = serviceAccount
            }
        }
        for part in parts {
            switch part {
            case .fixed(let set, let serviceAccount):
                add(set, serviceAccount)
            case .remote(_, let serviceAccount):
                if let set = snapshots[remoteIndex].keys { add(set, serviceAccount) }
                remoteIndex += 1
            }
        }
        guard !keys.isEmpty else {
            throw TokenGateError(.backendUnavailable, "no verification keys yet: the provider's JWKS has not been fetched")
        }
        let result: VerificationKeys
        do {
            result = VerificationKeys(keySet: try JWKSet(keys: keys), issuers: issuers)
        } catch {
            throw TokenGateError(.backendError, "the verification keys do not form a valid set: \(error)")
        }
        merged.withLock { $0 = (versions, result) }
        return result
    }

    /// The public keys as a JWKS document, rendered once per change of the keys (the route is unauthenticated).
    func publicJWKS() throws(TokenGateError) -> [UInt8] {
        let versions = remoteSets.map { $0.snapshot().version }
        if let cached = published.withLock({ $0 }), cached.versions == versions { return cached.json }
        let json: [UInt8]
        do {
            json = try current().keySet.publicJSON()
        } catch let error as TokenGateError {
            throw error
        } catch {
            throw TokenGateError(.backendError, "the provider's keys cannot be published: \(error)")
        }
        published.withLock { $0 = (versions, json) }
        return json
    }

    /// A token named a `kid` no key has: asks every URL for an early refresh (each rate-limited) and waits for
    /// them, each at most `wait`. Returns whether any set changed, so verifying again can change the answer.
    func refreshForUnknownKey(now: UInt64, waiting wait: Duration) async -> Bool {
        var changed = false
        for set in remoteSets where await set.refreshForUnknownKey(now: now, timeout: wait) { changed = true }
        return changed
    }
}
