import JOSE
import Testing
import TokenGateCoreTesting

@testable import TokenGateCore

@Suite struct AuthSessionTokenTests {
    let clock = ManualClock(wallSeconds: 1_700_000_000)
    let idp: TestIdentityProvider
    let callers: CallerAuthenticator

    init() throws {
        idp = try TestIdentityProvider()
        callers = CallerAuthenticator(provider: AuthFixtures.acme, clients: [idp.client()], clock: clock.gatewayClock)
    }

    private func token(_ claims: JSONObject = ["trips": ["trip-1", "trip-2"]]) throws -> String {
        try idp.sessionToken(now: clock.now, claims)
    }

    private func unauthenticatedReason(_ token: String) -> String? {
        let error = authError { _ = try callers.authenticate(authorization: "Bearer " + token) }
        #expect(error?.code == .unauthenticated)
        return error?.reason
    }

    @Test func validTokenAuthenticatesAsTheClientWithItsSubject() throws {
        let caller = try callers.authenticate(authorization: "Bearer " + token())
        #expect(caller.name == "rider-app")
        #expect(caller.kind == .sessionToken)
        #expect(caller.subject == "user-1")
        #expect(caller.claimValues["trips"] == ["trip-1", "trip-2"])
    }

    @Test func tripListedInArrayClaimIsAllowedAndAnUnlistedOneForbidden() throws {
        let caller = try callers.authenticate(authorization: "Bearer " + token())
        try callers.authorize(caller, for: AuthFixtures.trip("trip-2"))
        let error = authError { try callers.authorize(caller, for: AuthFixtures.trip("trip-3")) }
        #expect(error?.code == .forbidden)
        #expect(error?.reason == "tripId=trip-3 is not listed in claim 'trips' of client rider-app's session token")
        #expect(error?.reason.contains("trip-1") == false)
    }

    @Test func matchIsExactAndCaseSensitive() throws {
        let caller = try callers.authenticate(authorization: "Bearer " + token(["trips": ["trip-1"]]))
        for id in ["TRIP-1", "trip-", "trip-10"] {
            #expect(authError { try callers.authorize(caller, for: AuthFixtures.trip(id)) }?.code == .forbidden)
        }
    }

    @Test func stringClaimGrantsItsOneVehicle() throws {
        let caller = try callers.authenticate(authorization: "Bearer " + token(["vehicle": "car-7"]))
        try callers.authorize(caller, for: AuthFixtures.vehicle("car-7"))
        #expect(authError { try callers.authorize(caller, for: AuthFixtures.vehicle("car-8")) }?.code == .forbidden)
        // No trips claim: consumer tokens are forbidden although the client has a consumer grant.
        #expect(authError { try callers.authorize(caller, for: AuthFixtures.trip("car-7")) }?.code == .forbidden)
    }

    @Test(arguments: [
        JSONValue.integer(7), .bool(true), .null, .object(JSONObject(["trip-1": true])), .array(["trip-1", 7]),
        .array([.array(["trip-1"])]),
    ])
    func claimOfAnotherShapeGrantsNothing(value: JSONValue) throws {
        let caller = try callers.authenticate(authorization: "Bearer " + token(["trips": value]))
        #expect(authError { try callers.authorize(caller, for: AuthFixtures.trip("trip-1")) }?.code == .forbidden)
    }

    @Test func typesWithoutAGrantAreForbidden() throws {
        let caller = try callers.authenticate(authorization: "Bearer " + token(["deliveryVehicles": ["dv-1"]]))
        let error = authError { try callers.authorize(caller, for: .deliveryVehicle(ContextID("dv-1")!)) }
        #expect(error?.reason == "client rider-app may not have delivery-driver tokens")
    }

    @Test func serverTokensAreNeverVendedToASessionTokenClientEvenIfGranted() throws {
        // The parser refuses this grant; a hand-built configuration must not get around it.
        let client = idp.client(allow: [.server: .claim("trips"), .consumer: .anyContext])
        let callers = CallerAuthenticator(provider: AuthFixtures.acme, clients: [client], clock: clock.gatewayClock)
        let caller = try callers.authenticate(authorization: "Bearer " + token(["trips": ["*", "trip-1"]]))
        #expect(authError { try callers.authorize(caller, for: .fleet) }?.code == .forbidden)
        #expect(authError { try callers.authorize(caller, for: AuthFixtures.trip("trip-1")) }?.code == .forbidden)
    }

    @Test func wrongIssuerIsUnauthenticated() throws {
        let stranger = try TestIdentityProvider(issuer: "https://evil.test/")
        let reason = unauthenticatedReason(try stranger.sessionToken(now: clock.now))
        #expect(reason?.contains("issuer no jwt client") == true)
        #expect(reason?.contains("evil") == false)
    }

    @Test func sameIssuerOtherKeyIsUnauthenticated() throws {
        let impostor = try TestIdentityProvider(keyID: "idp-1")
        #expect(unauthenticatedReason(try impostor.sessionToken(now: clock.now))?.contains("bad_signature") == true)
        let unknownKid = try TestIdentityProvider(keyID: "idp-2")
        #expect(unauthenticatedReason(try unknownKid.sessionToken(now: clock.now))?.contains("unknown_kid") == true)
    }

    @Test func wrongAudienceIsUnauthenticated() throws {
        let token = try idp.sessionToken(now: clock.now, audience: "acme-driver-app")
        #expect(unauthenticatedReason(token) == "session token rejected (rider-app: wrong_audience)")
    }

    @Test func expiredTokenIsUnauthenticatedOnceTheLeewayIsOver() throws {
        let token = try idp.sessionToken(now: clock.now - 3600, lifetime: 3600)
        _ = try callers.authenticate(authorization: "Bearer " + token)  // exactly at exp: inside the 30 s leeway
        let late = try idp.sessionToken(now: clock.now - 3631, lifetime: 3600)
        #expect(unauthenticatedReason(late)?.contains("expired") == true)
    }

    @Test func tokenWithoutExpIsUnauthenticated() throws {
        let claims: JSONObject = ["iss": .string(idp.issuer), "aud": .string(TestIdentityProvider.audience)]
        let token = try JWSSigner(key: idp.key).sign(claims: claims)
        #expect(unauthenticatedReason(token)?.contains("missing_claim") == true)
    }

    @Test func tamperedPayloadIsUnauthenticated() throws {
        let parts = try token(["trips": ["trip-1"]]).split(separator: ".").map(String.init)
        var claims = try #require(JWTVerifier.decodeUnverified(parts.joined(separator: ".")).claims)
        claims["trips"] = ["trip-1", "trip-99"]
        let forged = [parts[0], Base64URL.encode(JSON.serialize(.object(claims))), parts[2]].joined(separator: ".")
        #expect(unauthenticatedReason(forged)?.contains("bad_signature") == true)
    }

    @Test func algNoneForgeryIsRejected() throws {
        let header = Base64URL.encode(Array(#"{"alg":"none","typ":"JWT"}"#.utf8))
        let claims: JSONObject = [
            "iss": .string(idp.issuer), "aud": .string(TestIdentityProvider.audience),
            "exp": .integer(clock.now + 600), "trips": ["trip-1"],
        ]
        let payload = Base64URL.encode(JSON.serialize(.object(claims)))
        for signature in ["", "AAAA"] {
            #expect(unauthenticatedReason("\(header).\(payload).\(signature)")?.contains("alg_not_allowed") == true)
        }
    }

    @Test func hs256SignedWithThePublicKeyIsRejected() throws {
        let rsa = try TestIdentityProvider(.rs256, keyID: "rsa-1")
        let callers = CallerAuthenticator(provider: AuthFixtures.acme, clients: [rsa.client()], clock: clock.gatewayClock)
        // The classic confusion: the attacker knows the public key and uses its bytes as an HMAC secret.
        let secret = Array(try rsa.key.publicKeyPEM().utf8)
        let forger = try JWSKey.hmac(secret: secret, algorithm: .hs256, keyID: "rsa-1")
        let claims: JSONObject = [
            "iss": .string(rsa.issuer), "aud": .string(TestIdentityProvider.audience),
            "exp": .integer(clock.now + 600), "trips": ["trip-1"],
        ]
        let forged = try JWSSigner(key: forger).sign(claims: claims)
        let error = authError { _ = try callers.authenticate(authorization: "Bearer " + forged) }
        #expect(error?.code == .unauthenticated)
        #expect(error?.reason.contains("alg_not_allowed") == true)
        // The genuine RS256 token of the same IdP passes.
        _ = try callers.authenticate(authorization: "Bearer " + rsa.sessionToken(now: clock.now))
    }

    @Test func revokedSessionClientIsUnauthenticated() throws {
        let callers = CallerAuthenticator(
            provider: AuthFixtures.acme, clients: [idp.client(isRevoked: true)], clock: clock.gatewayClock)
        let error = authError { _ = try callers.authenticate(authorization: "Bearer " + token()) }
        #expect(error?.reason == "revoked client rider-app")
        #expect(callers.sessionMemoCount == 0)
    }

    @Test func clientsSharingAnIssuerAreTriedByAudience() throws {
        let rider = idp.client()
        let driver = idp.client(name: "driver-app", audiences: ["acme-driver-app"], allow: [.driver: .claim("vehicle")])
        let callers = CallerAuthenticator(provider: AuthFixtures.acme, clients: [rider, driver], clock: clock.gatewayClock)
        let token = try idp.sessionToken(now: clock.now, audience: "acme-driver-app", ["vehicle": "car-1"])
        let caller = try callers.authenticate(authorization: "Bearer " + token)
        #expect(caller.name == "driver-app")
        try callers.authorize(caller, for: AuthFixtures.vehicle("car-1"))
    }

    @Test func reasonsNeverContainTheToken() throws {
        let token = try idp.sessionToken(now: clock.now, audience: "other")
        let reason = try #require(unauthenticatedReason(token))
        for part in token.split(separator: ".") { #expect(!reason.contains(part)) }
    }
}
