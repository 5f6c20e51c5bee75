public import JOSE

/// What every key that loaded must do, whatever text it came from.
public enum KeyChecks {
    private static let message = Array("fuzz: a signing input".utf8)

    /// A private key's signature verifies under its own public half (a JWK spells both halves, so they could
    /// disagree); the public JWK re-imports as the same key and exports the same JWK again.
    public static func check(_ key: JWSKey) {
        if key.isPrivate {
            let signature: [UInt8]
            do { signature = try key.signature(for: message) } catch {
                invariant(false, "a loaded private \(key.summary) key cannot sign: \(error)")
                return
            }
            invariant(
                key.publicKey().isValidSignature(signature, for: message),
                "a loaded \(key.summary) key's signature does not verify under its public half"
            )
        }
        guard !key.isSymmetric else { return }
        do {
            let jwk = try key.publicJWK()
            let reimported = try JWSKey.jwk(jwk)
            invariant(reimported.algorithm == key.algorithm, "the public JWK re-imports with another algorithm")
            invariant(reimported.keyID == key.keyID, "the public JWK re-imports with another kid")
            let again = try reimported.publicJWK()
            invariant(again == jwk, "the public JWK does not survive a round trip")
        } catch {
            invariant(false, "a loaded \(key.summary) key's public JWK does not re-import: \(error)")
        }
    }
}
