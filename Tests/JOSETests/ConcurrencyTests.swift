import JOSE
import Testing

@Suite struct ConcurrencyTests {
    // One shared key, many tasks: each operation makes its own EVP_MD_CTX, so this must be race-free
    // (run with --sanitize=thread to check).
    @Test(arguments: [JWSAlgorithm.rs256, .ps256, .es256, .edDSA, .hs256])
    func oneKeySignsAndVerifiesFromManyTasks(algorithm: JWSAlgorithm) async throws {
        let key = try JWSKey.generate(algorithm, keyID: "shared")
        let signer = try JWSSigner(key: key)
        let verifier = try JWTVerifier(keys: JWKSet(keys: [key.publicKey()]))
        try await withThrowingTaskGroup(of: Bool.self) { group in
            for index in 0..<32 {
                group.addTask {
                    let token = try signer.sign(claims: ["exp": 2_000_000_000, "n": .integer(Int64(index))])
                    let verified = try verifier.verify(token, policy: ValidationPolicy(), now: 1_900_000_000)
                    let forged = token.dropLast(2) + (token.hasSuffix("AA") ? "BA" : "AA")
                    return verified.claims["n"] == .integer(Int64(index))
                        && (try? verifier.verify(String(forged), policy: ValidationPolicy(), now: 1_900_000_000)) == nil
                }
            }
            for try await ok in group { #expect(ok) }
        }
    }
}
