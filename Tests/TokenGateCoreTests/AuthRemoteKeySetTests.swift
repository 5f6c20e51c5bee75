import Foundation
import JOSE
import Logging
import Testing
import TokenGateCoreTesting

@testable import TokenGateCore

@Suite(.timeLimit(.minutes(5))) struct AuthRemoteKeySetTests {
    static let url = "https://idp.acme.test/.well-known/jwks.json"

    let clock = ManualClock(wallSeconds: 1_700_000_000)
    let logs = LogRecorder()
    let idp: TestIdentityProvider
    let fetcher: ScriptedJWKSFetcher
    let keySet: RemoteKeySet
    let callers: CallerAuthenticator

    init() throws {
        idp = try TestIdentityProvider()
        fetcher = try ScriptedJWKSFetcher(serving: idp.jwks)
        keySet = RemoteKeySet(url: JWKSURL(checked: Self.url), fetcher: fetcher, clock: clock.gatewayClock, logger: logs.logger)
        callers = CallerAuthenticator(
            provider: AuthFixtures.acme, clients: [idp.remoteClient(keySet)], clock: clock.gatewayClock, keySets: [keySet])
    }

    private func authenticate(_ token: String) throws -> AuthenticatedCaller {
        try callers.authenticate(authorization: "Bearer " + token)
    }

    private func rejection(_ token: String) -> TokenGateError? {
        authError { _ = try authenticate(token) }
    }

    private func token(signedBy signer: TestIdentityProvider? = nil) throws -> String {
        try (signer ?? idp).sessionToken(now: clock.now, ["trips": ["trip-1"]])
    }

    @Test func sessionTokensAreRefusedUntilTheFirstFetchThenAccepted() async throws {
        let error = rejection(try token())
        #expect(error?.code == .unauthenticated)
        #expect(error?.reason.contains("identity provider keys not loaded yet") == true, "\(error?.reason ?? "")")
        #expect(callers.sessionVerificationCount == 0)

        #expect(await keySet.refresh())
        #expect(fetcher.urls == [Self.url])
        let caller = try authenticate(try token())
        #expect(caller.name == "rider-app")
        try callers.authorize(caller, for: AuthFixtures.trip("trip-1"))
        #expect(keySet.lastFailure == nil)
    }

    @Test(arguments: [
        ScriptedJWKSFetcher.Answer.failure("connection refused"),
        .body(Array("<html>502 Bad Gateway</html>".utf8)),
        .body(Array(#"{"keys":[]}"#.utf8)),
        .body(Array(#"{"keys":[{"kty":"RSA","kid":"x"}]}"#.utf8)),
    ])
    func aFailedOrUnusableFetchKeepsTheLastGoodKeySet(answer: ScriptedJWKSFetcher.Answer) async throws {
        #expect(await keySet.refresh())
        fetcher.answer(answer)
        #expect(await keySet.refresh() == false)
        #expect(keySet.current()?.key(withID: "idp-1") != nil)
        #expect(keySet.lastFailure != nil)
        _ = try authenticate(try token())
        #expect(keySet.counts.successes == 1)
        #expect(keySet.counts.failures == 1)
        // The next good fetch clears the failure.
        try fetcher.serve(idp.jwks)
        #expect(await keySet.refresh())
        #expect(keySet.lastFailure == nil)
    }

    /// A JWKS that is well-formed JSON but hostile or weak is refused as a whole; the last good set keeps
    /// verifying and the failure is reported.
    @Test(arguments: ["duplicate kids", "symmetric and asymmetric mixed", "use: enc", "RSA 1024 bits"])
    func aHostileKeySetIsRefusedAndTheLastGoodSetKept(_ fault: String) async throws {
        #expect(await keySet.refresh())
        let published = try #require(try JSON.parse(try idp.jwks.publicJSON()).objectValue?["keys"]?.arrayValue?.first?.objectValue)
        var keys: [JSONValue]
        switch fault {
        case "duplicate kids":
            keys = [.object(published), .object(published)]
        case "symmetric and asymmetric mixed":
            keys = [.object(published), .object(["kty": "oct", "kid": "shared", "k": .string(Base64URL.encode(Array(repeating: 7, count: 32)))])]
        case "use: enc":
            var encryption = published
            encryption["use"] = "enc"
            keys = [.object(encryption)]
        default:
            keys = [.object(try await Self.weakRSAKey())]
        }
        fetcher.answer(.body(JSON.serialize(.object(["keys": .array(keys)]))))
        #expect(await keySet.refresh() == false)
        #expect(keySet.lastFailure != nil)
        #expect(keySet.current()?.key(withID: "idp-1") != nil)
        _ = try authenticate(try token())
    }

    /// A 1024-bit RSA public JWK made by Python's cryptography (TokenGate itself refuses to make one).
    static func weakRSAKey() async throws -> JSONObject {
        let script = """
            import base64, json
            from cryptography.hazmat.primitives.asymmetric import rsa
            n = rsa.generate_private_key(public_exponent=65537, key_size=1024).public_key().public_numbers().n
            b = lambda v: base64.urlsafe_b64encode(v.to_bytes((v.bit_length() + 7) // 8, "big")).rstrip(b"=").decode()
            print(json.dumps({"kty": "RSA", "kid": "weak-1", "alg": "RS256", "n": b(n), "e": b(65537)}))
            """
        let (status, output) = try await ChildProcess.run("python3", ["-c", script], mergingErrors: false)
        try #require(status == 0, "python3 with cryptography is needed to make a 1024-bit key")
        return try #require(try JSON.parse(Array(output.utf8)).objectValue)
    }

    @Test func failuresAreLoggedWithAReasonAndNeverKeyMaterial() async throws {
        fetcher.answer(.failure("connection refused"))
        await keySet.refresh()
        try fetcher.serve(idp.jwks)
        await keySet.refresh()
        // A JWKS whose second key is broken: the whole set is refused, and the log must not echo the good key.
        let good = try String(decoding: idp.jwks.publicJSON(), as: UTF8.self)
        let coordinate = try #require(good.split(separator: "\"x\":\"").last?.prefix(20))
        let broken = good.replacingOccurrences(of: "]}", with: #",{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}]}"#)
        fetcher.answer(.body(Array(broken.utf8)))
        await keySet.refresh()

        let lines = logs.lines
        #expect(lines.count == 3)
        #expect(lines[0].hasPrefix("warning JWKS not refreshed: fetching the JWKS failed: connection refused; no keys yet"))
        #expect(lines[0].contains("jwks_url=\(Self.url)"))
        #expect(lines[1].hasPrefix("info JWKS loaded"))
        #expect(lines[1].contains("kids=idp-1"))
        #expect(lines[2].contains("the response is not a usable JWKS"))
        #expect(lines[2].contains("keeping the last good key set"))
        for line in lines {
            #expect(!line.contains(coordinate), "\(line)")
            #expect(!line.contains("-----BEGIN"))
        }
    }

    @Test func unknownKidIsRefusedAndAsksForOneEarlyRefreshPerThirtySeconds() async throws {
        await keySet.refresh()
        let rotated = try TestIdentityProvider(keyID: "idp-2")

        let error = rejection(try token(signedBy: rotated))
        #expect(error?.code == .unauthenticated)
        #expect(error?.reason.contains("unknown_kid") == true)
        #expect(keySet.counts.earlyRefreshes == 1)
        // A flood of tokens with unknown kids costs nothing more within the interval.
        for _ in 0..<5 { _ = rejection(try token(signedBy: rotated)) }
        clock.advance(by: .seconds(29))
        _ = rejection(try token(signedBy: rotated))
        #expect(keySet.counts.earlyRefreshes == 1)
        clock.advance(by: .seconds(1))
        _ = rejection(try token(signedBy: rotated))
        #expect(keySet.counts.earlyRefreshes == 2)
        // Other failures (a bad signature from a known kid) are no reason to refetch.
        clock.advance(by: .seconds(60))
        let forger = try TestIdentityProvider(keyID: "idp-1")
        #expect(rejection(try token(signedBy: forger))?.reason.contains("bad_signature") == true)
        #expect(keySet.counts.earlyRefreshes == 2)
        // Requesting never fetched by itself: only the refresher fetches.
        #expect(fetcher.count == 1)
    }

    @Test func refresherFetchesAtStartAndEarlyForAnUnknownKidThenTheRotatedKeyWorks() async throws {
        let refresher = KeySetRefresher(keySet: keySet)
        var fetches = fetcher.fetches.makeAsyncIterator()
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await refresher.run() }
            defer { group.cancelAll() }
            #expect(await fetches.next() == 1)
            try await yieldUntil { keySet.current() != nil }
            _ = try authenticate(try token())

            // The identity provider rotates; the gateway does not know the new kid until it refetches.
            let rotated = try TestIdentityProvider(keyID: "idp-2")
            try fetcher.serve(JWKSet(keys: [idp.key.publicKey(), rotated.key.publicKey()]))
            #expect(rejection(try token(signedBy: rotated))?.reason.contains("unknown_kid") == true)
            // The refresh interval is an hour: only the early request can cause this second fetch.
            #expect(await fetches.next() == 2)
            try await yieldUntil { keySet.current()?.key(withID: "idp-2") != nil }
            _ = try authenticate(try token(signedBy: rotated))
            _ = try authenticate(try token())
            #expect(fetcher.count == 2)
        }
    }

    @Test func aRequestWhileTheRefresherIsBusyIsNotLost() async {
        #expect(keySet.requestEarlyRefresh(now: clock.monotonicNanoseconds))
        // No waiter yet: the request is kept, so this returns at once instead of after an hour.
        await keySet.waitForRefreshRequest(upTo: .seconds(3600))
        #expect(keySet.counts.earlyRefreshes == 1)
    }

    @Test func theRefresherEndsWhenCancelledWhileWaiting() async throws {
        fetcher.answer(.failure("unreachable"))
        let refresher = KeySetRefresher(keySet: keySet)
        var fetches = fetcher.fetches.makeAsyncIterator()
        let task = Task { try await refresher.run() }
        #expect(await fetches.next() == 1)
        try await yieldUntil { keySet.counts.failures == 1 }
        task.cancel()
        try await task.value
        #expect(keySet.current() == nil)
    }

    /// A backend token with an unknown kid waits for the refresher's early fetch, then verifies with the new set.
    @Test func aBackendTokenWithAnUnknownKidWaitsForTheEarlyFetch() async throws {
        await keySet.refresh()
        let rotated = try TestIdentityProvider(keyID: "idp-2")
        try fetcher.serve(JWKSet(keys: [idp.key.publicKey(), rotated.key.publicKey()]))
        var fetches = fetcher.fetches.makeAsyncIterator()
        #expect(await fetches.next() == 1)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await KeySetRefresher(keySet: keySet).run() }
            defer { group.cancelAll() }
            // The refresher's first fetch is an hour away: only the early request fetches now.
            try await yieldUntil { keySet.counts.successes == 1 }
            let changed = await keySet.refreshForUnknownKey(now: clock.monotonicNanoseconds, timeout: .seconds(30))
            #expect(changed)
            #expect(keySet.current()?.key(withID: "idp-2") != nil)
            // Rate-limited: a second unknown kid within 30 s waits for nothing and fetches nothing.
            #expect(await keySet.refreshForUnknownKey(now: clock.monotonicNanoseconds, timeout: .seconds(30)) == false)
            #expect(fetcher.count == 2)
        }
    }

    /// The command line runs no refresher: an unknown kid there fetches at once, itself.
    @Test func withoutARefresherAnUnknownKidFetchesItself() async throws {
        await keySet.refresh()
        let rotated = try TestIdentityProvider(keyID: "idp-2")
        try fetcher.serve(JWKSet(keys: [rotated.key.publicKey()]))
        #expect(await keySet.refreshForUnknownKey(now: clock.monotonicNanoseconds))
        #expect(fetcher.count == 2)
    }

    /// A JWKS served over the network must hold public keys only: a shared secret there would let anyone sign.
    @Test func aSetWithASymmetricKeyIsRefused() async throws {
        fetcher.answer(.body(Array(#"{"keys":[{"kty":"oct","alg":"HS256","kid":"s","k":"c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA"}]}"#.utf8)))
        #expect(await keySet.refresh() == false)
        #expect(keySet.lastFailure?.contains("symmetric") == true, "\(keySet.lastFailure ?? "")")
        #expect(keySet.current() == nil)
    }
}
