import FuzzSupport
import JOSE

/// The keys the seed tokens were signed with (public halves and one HMAC secret, made by make-seeds.py at seed
/// time) and the exact `header.payload` texts they signed.
struct JWSFixture: Sendable {
    /// Asymmetric keys and HMAC secrets cannot share a set, so each gets its own verifier.
    let verifiers: [JWTVerifier]
    let signingInputs: Set<[UInt8]>
    let now: Int64
    let policies: [ValidationPolicy]

    init() {
        let fixture = Fixture.object("jws.json")
        do {
            verifiers = [
                JWTVerifier(keys: try JWKSet(json: fixture.fixtureBytes("asymmetricKeys"))),
                JWTVerifier(keys: try JWKSet(json: fixture.fixtureBytes("symmetricKeys"))),
            ]
        } catch {
            fatalError("the fixture's key sets do not load: \(error)")
        }
        signingInputs = Set(fixture.fixtureStrings("signingInputs").map { Array($0.utf8) })
        now = fixture.fixtureInteger("now")
        var strict = ValidationPolicy()
        strict.issuer = fixture.fixtureString("issuer")
        strict.audiences = [fixture.fixtureString("audience")]
        strict.maxLifetime = 3600
        strict.requireKeyID = true
        strict.requiredType = "JWT"
        strict.allowedAlgorithms = Set(JWSAlgorithm.allCases)
        var signatureOnly = ValidationPolicy()
        signatureOnly.signatureOnly = true
        policies = [ValidationPolicy(), strict, signatureOnly]
    }
}

let fixture = JWSFixture()

/// Any token may be refused; one may be accepted only if its signed part (everything before the last ".") is,
/// byte for byte, what a seed key signed. Anything else accepted is a forgery and stops the fuzzer.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJWS(_ data: UnsafePointer<UInt8>?, _ size: Int) -> CInt {
    let bytes = fuzzInput(data, size)
    let token = String(decoding: bytes, as: UTF8.self)
    _ = JWTVerifier.decodeUnverified(token)
    for verifier in fixture.verifiers {
        for policy in fixture.policies {
            guard let verified = try? verifier.verify(token, policy: policy, now: fixture.now) else { continue }
            let utf8 = Array(token.utf8)
            let signed = utf8.lastIndex(of: UInt8(ascii: ".")).map { Array(utf8[..<$0]) } ?? utf8
            invariant(fixture.signingInputs.contains(signed), "accepted a token whose signed part no seed key signed")
            invariant(verified.algorithm == verified.key.algorithm, "accepted \(verified.algorithm) with a \(verified.key.algorithm) key")
            if let keyID = verified.keyID {
                invariant(verified.key.keyID == keyID, "the token's kid chose a key with another kid")
            }
        }
    }
    return 0
}
