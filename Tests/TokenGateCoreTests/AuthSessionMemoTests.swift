import JOSE
import Testing
import TokenGateCoreTesting

@testable import TokenGateCore

@Suite struct AuthSessionMemoTests {
    let clock = ManualClock(wallSeconds: 1_700_000_000)
    let idp: TestIdentityProvider

    init() throws {
        idp = try TestIdentityProvider()
    }

    private func authenticator(limit: Int = 100) -> CallerAuthenticator {
        CallerAuthenticator(provider: AuthFixtures.acme, clients: [idp.client()], clock: clock.gatewayClock, sessionMemoLimit: limit)
    }

    private func token(_ trip: String = "trip-1", lifetime: Int64 = 600) throws -> String {
        try idp.sessionToken(now: clock.now, lifetime: lifetime, ["trips": .array([.string(trip)])])
    }

    @Test func repeatAuthenticationOfAVerifiedTokenCostsNoSignatureCheck() throws {
        let callers = authenticator()
        let header = "Bearer " + (try token())
        let first = try callers.authenticate(authorization: header)
        let second = try callers.authenticate(authorization: header)
        #expect(callers.sessionVerificationCount == 1)
        #expect(callers.sessionMemoCount == 1)
        #expect(first == second)
        // The remembered caller carries the same grants.
        try callers.authorize(second, for: AuthFixtures.trip("trip-1"))
    }

    @Test func rememberedTokenIsRefusedOnceExpiredAndForgotten() throws {
        let callers = authenticator()
        let header = "Bearer " + (try token(lifetime: 600))
        _ = try callers.authenticate(authorization: header)
        clock.advance(by: .seconds(600 + 29))  // exp plus 29 s: still inside the 30 s leeway, served from the memo
        _ = try callers.authenticate(authorization: header)
        #expect(callers.sessionVerificationCount == 1)
        clock.advance(by: .seconds(1))  // now == exp + leeway: the verifier would refuse it, so must the memo
        let error = authError { _ = try callers.authenticate(authorization: header) }
        #expect(error?.code == .unauthenticated)
        #expect(error?.reason.contains("expired") == true)
        #expect(callers.sessionMemoCount == 0)
        #expect(callers.sessionVerificationCount == 2)
    }

    @Test func failuresAreNeverRemembered() throws {
        let callers = authenticator()
        let header = "Bearer " + (try idp.sessionToken(now: clock.now, audience: "someone-else"))
        for _ in 0..<3 {
            #expect(authError { _ = try callers.authenticate(authorization: header) }?.code == .unauthenticated)
        }
        #expect(callers.sessionVerificationCount == 3)
        #expect(callers.sessionMemoCount == 0)
    }

    @Test func memoIsBoundedAndForgetsTheLeastRecentlyUsed() throws {
        let callers = authenticator(limit: 2)
        let headers = try (1...3).map { "Bearer " + (try token("trip-\($0)")) }
        _ = try callers.authenticate(authorization: headers[0])
        _ = try callers.authenticate(authorization: headers[1])
        _ = try callers.authenticate(authorization: headers[0])  // now headers[1] is the least recently used
        _ = try callers.authenticate(authorization: headers[2])
        #expect(callers.sessionMemoCount == 2)
        #expect(callers.sessionVerificationCount == 3)
        _ = try callers.authenticate(authorization: headers[0])  // still remembered
        #expect(callers.sessionVerificationCount == 3)
        _ = try callers.authenticate(authorization: headers[1])  // evicted: verified again
        #expect(callers.sessionVerificationCount == 4)
        #expect(callers.sessionMemoCount == 2)
    }

    @Test func aLimitOfZeroTurnsTheMemoOff() throws {
        let callers = authenticator(limit: 0)
        let header = "Bearer " + (try token())
        _ = try callers.authenticate(authorization: header)
        _ = try callers.authenticate(authorization: header)
        #expect(callers.sessionVerificationCount == 2)
        #expect(callers.sessionMemoCount == 0)
    }

    @Test func aTamperedCopyOfARememberedTokenIsNotAHit() throws {
        let callers = authenticator()
        let genuine = try token()
        _ = try callers.authenticate(authorization: "Bearer " + genuine)
        var bytes = Array(genuine.utf8)
        bytes[bytes.count - 2] = bytes[bytes.count - 2] == UInt8(ascii: "A") ? UInt8(ascii: "B") : UInt8(ascii: "A")
        let tampered = String(decoding: bytes, as: UTF8.self)
        #expect(authError { _ = try callers.authenticate(authorization: "Bearer " + tampered) }?.code == .unauthenticated)
    }

    @Test func concurrentCallersShareOneMemo() async throws {
        let callers = authenticator()
        let header = "Bearer " + (try token())
        _ = try callers.authenticate(authorization: header)
        try await withThrowingTaskGroup(of: AuthenticatedCaller.self) { group in
            for _ in 0..<16 { group.addTask { try callers.authenticate(authorization: header) } }
            for try await caller in group { #expect(caller.name == "rider-app") }
        }
        #expect(callers.sessionVerificationCount == 1)
    }
}
