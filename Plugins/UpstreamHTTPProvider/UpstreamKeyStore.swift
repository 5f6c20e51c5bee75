import JOSE
import TokenGateCore

/// A provider's verification keys: the `verify:` files read at load plus every `jwksUrl:` set, merged.
struct UpstreamKeyStore: Sendable {
    let fileKeys: VerificationKeys
    let remote: [RemoteKeySet]

    /// File keys plus the last good set of each URL. Throws only when there is no key at all.
    func current() async throws -> VerificationKeys {
        var sets: [(keys: [JWSKey], serviceAccount: String)] = []
        for set in remote {
            if let keys = await set.keys() { sets.append((keys, set.source.serviceAccount)) }
        }
        return try merged(sets)
    }

    /// After an unknown `kid`: refetches every URL set (each rate-limited) and returns the merged keys if any set
    /// changed, else `nil`.
    func refreshed() async throws -> VerificationKeys? {
        var changed = false
        var sets: [(keys: [JWSKey], serviceAccount: String)] = []
        for set in remote {
            if let fresh = await set.refetch() {
                changed = true
                sets.append((fresh, set.source.serviceAccount))
            } else if let keys = await set.keys() {
                sets.append((keys, set.source.serviceAccount))
            }
        }
        return changed ? try merged(sets) : nil
    }

    private func merged(_ sets: [(keys: [JWSKey], serviceAccount: String)]) throws -> VerificationKeys {
        var keys = fileKeys.keySet.keys
        var issuers = fileKeys.issuers
        var seen = Set(keys.compactMap(\.keyID))
        // The first source to name a kid wins: a remote set cannot shadow a key pinned in a file.
        for set in sets {
            for key in set.keys {
                guard let keyID = key.keyID, seen.insert(keyID).inserted else { continue }
                keys.append(key)
                issuers[keyID] = set.serviceAccount
            }
        }
        guard !keys.isEmpty else {
            throw TokenGateError(.backendUnavailable, "no verification keys: the provider's JWKS could not be fetched")
        }
        do {
            return VerificationKeys(keySet: try JWKSet(keys: keys), issuers: issuers)
        } catch {
            throw TokenGateError(.backendError, "the verification keys do not form a valid set: \(error)")
        }
    }
}
