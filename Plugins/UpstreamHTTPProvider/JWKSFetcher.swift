import AsyncHTTPClient
import JOSE
import NIOHTTP1
import TokenGateCore

/// Fetches and checks one JWKS over the shared HTTP client, with its own small timeout and body cap.
struct JWKSFetcher: Sendable {
    let client: HTTPClient
    var timeout: Duration = .seconds(3)
    var maxBodyBytes = 512 * 1024

    /// The public RS256 keys of the set at `url`. Throws when the fetch fails or the set is not usable: a set that
    /// does not parse, is empty, or has a key without `kid` never replaces a good one.
    func fetch(_ url: String) async throws -> [JWSKey] {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Accept", value: "application/json")
        let deadline = ContinuousClock.now + timeout
        let outcome = await HTTPExchange.attempt(
            request,
            client: client,
            headDeadline: deadline,
            deadline: deadline,
            maxBodyBytes: maxBodyBytes,
            what: "the JWKS endpoint"
        )
        let body: [UInt8]
        switch outcome {
        case .body(let bytes): body = bytes
        case .retryable(let error, _), .final(let error): throw error
        }
        let set: JWKSet
        do { set = try JWKSet(json: body) } catch {
            throw TokenGateError(.backendError, "the JWKS is not usable: \(error)")
        }
        let keys = set.keys.filter { !$0.isSymmetric }.map { $0.publicKey() }
        guard !keys.isEmpty else { throw TokenGateError(.backendError, "the JWKS holds no public key") }
        guard keys.allSatisfy({ $0.keyID != nil }) else { throw TokenGateError(.backendError, "a JWKS key has no kid") }
        return keys
    }
}
