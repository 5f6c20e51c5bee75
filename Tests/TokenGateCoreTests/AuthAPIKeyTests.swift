import JOSE
import Testing
import TokenGateCoreTesting

@testable import TokenGateCore

@Suite struct AuthAPIKeyTests {
    let clock = ManualClock(wallSeconds: 1_700_000_000)

    private func authenticator(_ clients: [ClientConfig]) -> CallerAuthenticator {
        CallerAuthenticator(provider: AuthFixtures.acme, clients: clients, clock: clock.gatewayClock)
    }

    private func threeClients() throws -> CallerAuthenticator {
        authenticator([
            try AuthFixtures.apiKeyClient("billing", key: "tg_billing-key"),
            try AuthFixtures.apiKeyClient("dispatch", key: "tg_dispatch-key", allow: [.driver: .anyContext, .server: .wholeFleet]),
            try AuthFixtures.apiKeyClient("old-backend", key: "tg_old-key", isRevoked: true),
        ])
    }

    @Test func rightKeyAuthenticatesAsItsOwnClientAmongSeveral() throws {
        let callers = try threeClients()
        let caller = try callers.authenticate(authorization: "Bearer tg_dispatch-key")
        #expect(caller.name == "dispatch")
        #expect(caller.kind == .apiKey)
        #expect(caller.provider == AuthFixtures.acme)
        #expect(try callers.authenticate(authorization: "Bearer tg_billing-key").name == "billing")
    }

    @Test func schemeIsCaseInsensitive() throws {
        let callers = try threeClients()
        #expect(try callers.authenticate(authorization: "bearer tg_billing-key").name == "billing")
        #expect(try callers.authenticate(authorization: "BEARER tg_billing-key").name == "billing")
    }

    @Test func wrongKeyIsUnauthenticatedWithoutEchoingIt() throws {
        let error = authError { _ = try threeClients().authenticate(authorization: "Bearer tg_guess-key") }
        #expect(error?.code == .unauthenticated)
        #expect(error?.reason == "unknown API key")
        #expect(error?.reason.contains("tg_guess") == false)
    }

    @Test func missingHeaderIsUnauthenticatedNoCredential() throws {
        let callers = try threeClients()
        for header in [nil, ""] as [String?] {
            let error = authError { _ = try callers.authenticate(authorization: header) }
            #expect(error?.code == .unauthenticated)
            #expect(error?.reason == "no credential")
        }
    }

    @Test(arguments: [
        "tg_billing-key", "Bearer", "Bearer ", "Basic tg_billing-key", "Bearer tg_billing-key extra",
        "Bearer  tg_billing-key", "Bearer tg_billing-key ", "Bearer\ttg_billing-key", "Bearer tg_bill\u{7F}ing-key",
        "Bearer tg_billing-kéy", "Bearerx tg_billing-key",
    ])
    func malformedHeaderIsUnauthenticated(header: String) throws {
        let error = authError { _ = try threeClients().authenticate(authorization: header) }
        #expect(error?.code == .unauthenticated)
        #expect(error?.reason.contains("billing") == false)
    }

    @Test(arguments: [BearerCredential.maxBytes, BearerCredential.maxBytes + 1])
    func credentialLengthIsCapped(length: Int) throws {
        let key = String(repeating: "k", count: length)
        let callers = authenticator([try AuthFixtures.apiKeyClient("long", key: key)])
        let error = authError { _ = try callers.authenticate(authorization: "Bearer " + key) }
        if length <= BearerCredential.maxBytes {
            #expect(error == nil)
        } else {
            #expect(error?.code == .unauthenticated)
            #expect(error?.reason.contains("longer than") == true)
        }
    }

    @Test func revokedClientIsUnauthenticatedAndTheReasonSaysWhy() throws {
        let error = authError { _ = try threeClients().authenticate(authorization: "Bearer tg_old-key") }
        #expect(error?.code == .unauthenticated)
        #expect(error?.reason == "revoked client old-backend")
    }

    @Test func apiKeyClientGetsOnlyTheTypesItsAllowListNames() throws {
        let callers = try threeClients()
        let billing = try callers.authenticate(authorization: "Bearer tg_billing-key")
        try callers.authorize(billing, for: AuthFixtures.trip("trip-1"))
        let driver = authError { try callers.authorize(billing, for: AuthFixtures.vehicle("v-1")) }
        #expect(driver?.code == .forbidden)
        #expect(driver?.reason == "client billing may not have driver tokens")
        // Server tokens only when explicitly listed.
        #expect(authError { try callers.authorize(billing, for: .fleet) }?.code == .forbidden)
        let dispatch = try callers.authenticate(authorization: "Bearer tg_dispatch-key")
        try callers.authorize(dispatch, for: .fleet)
        try callers.authorize(dispatch, for: AuthFixtures.vehicle("v-9"))
    }

    @Test func aJWSShapedCredentialIsNeverComparedAsAnAPIKey() throws {
        // Three base64url segments go to the session-token path; with no jwt client nothing accepts them.
        let key = "aaaa.bbbb.cccc"
        let callers = authenticator([try AuthFixtures.apiKeyClient("dotted", key: key)])
        #expect(authError { _ = try callers.authenticate(authorization: "Bearer " + key) }?.code == .unauthenticated)
    }

    /// What counts as a session token's shape: three base64url segments, the first two non-empty.
    @Test(arguments: [
        ("aaaa.bbbb.cccc", true), ("a.b.", true), ("eyJ-_.eyJ_-.sig-_", true), ("aaaa.bbbb", false), ("a.b.c.d", false),
        // Longer than the 255-byte blocks the check counts dots in: 258 dots must not wrap around to 2.
        (String(repeating: "h", count: 300) + "." + String(repeating: "p", count: 700) + "." + String(repeating: "s", count: 342), true),
        (String(repeating: "a.", count: 258), false), (String(repeating: "a", count: 600) + "." + String(repeating: "b", count: 600) + "!.c", false),
        (".bbbb.cccc", false), ("aaaa..cccc", false), ("..", false), ("aaaa.bb+b.cccc", false), ("aaaa.bbbb.cc=c", false),
        ("aaaa.bbbb.cc cc", false), ("aa\u{e9}.bbbb.cccc", false), ("tg_demo_not_a_secret", false),
    ])
    func aCredentialHasTheShapeOfACompactJWS(credential: String, isJWS: Bool) {
        #expect(BearerCredential.isCompactJWS(credential) == isJWS)
    }

    @Test func callerIdentityIsProviderNameAndKind() throws {
        let callers = try threeClients()
        let first = try callers.authenticate(authorization: "Bearer tg_billing-key")
        let second = try callers.authenticate(authorization: "Bearer tg_billing-key")
        #expect(first == second)
        #expect(Set([first, second]).count == 1)
        #expect(first != (try callers.authenticate(authorization: "Bearer tg_dispatch-key")))
        #expect(first.description == "api-key client billing at acme-rides")
    }
}
