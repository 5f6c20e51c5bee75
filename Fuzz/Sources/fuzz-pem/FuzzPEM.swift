import FuzzSupport
import JOSE
import OpenSSLPrimitives

/// Key files as `--key FILE` and the static-key backend read them: PEM (private, public, certificate), Google
/// service-account JSON, JWK or JWKS, detected by content. Every key that loads must pass `KeyChecks`, and its
/// public PEM must load again and export the same PEM.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzPEM(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzInput(data, size)
    for key in (try? KeyFile.load(bytes: bytes)) ?? [] {
        KeyChecks.check(key)
        guard !key.isSymmetric else { continue }
        do {
            let pem = try key.publicKeyPEM()
            let reloaded = try JWSKey.pem(pem, algorithm: key.algorithm)
            invariant(!reloaded.isPrivate, "a PUBLIC KEY block loaded as a private key")
            let again = try reloaded.publicKeyPEM()
            invariant(again == pem, "the public PEM loads as another key")
        } catch {
            invariant(false, "a loaded \(key.summary) key's public PEM does not load again: \(error)")
        }
    }
    if let account = try? ServiceAccountKey(json: bytes) {
        invariant(account.key.isPrivate, "a service account loaded without a private key")
        invariant(account.key.algorithm == .rs256, "a service account key is not RS256")
        invariant(account.key.keyID == account.privateKeyID, "the service account's kid is not its private_key_id")
    }
    // Certificates carrying verification keys: their validity is read separately from the key.
    _ = try? CertificateValidity.of(pem: String(decoding: bytes, as: UTF8.self))
    return 0
}
