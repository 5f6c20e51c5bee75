import JOSE
import Testing
import TokenGateCore

/// Tokens without a `kid`, as Google's own token servers sign them (IAM `signBlob` over `header.payload`, header
/// `{"alg":"RS256","typ":"JWT"}`): verified against the keys bound to the account their `iss` names, and only
/// those; every other check unchanged.
@Suite struct KeylessTokenVerificationTests {
    static let consumer = "consumer@acme.iam.gserviceaccount.com"
    static let driver = "driver@acme.iam.gserviceaccount.com"
    static let now: Int64 = 1_800_000_000
    static let trip = TokenContext.trip(ContextID("trip-1")!)
    static let consumerKeys = [try! JWSKey.generate(.rs256, keyID: "consumer-old"), try! JWSKey.generate(.rs256, keyID: "consumer-new")]
    static let driverKey = try! JWSKey.generate(.rs256, keyID: "driver-1")

    let verifier: FleetEngineVerifier = {
        let keys = (Self.consumerKeys + [Self.driverKey]).map { $0.publicKey() }
        let issuers = ["consumer-old": Self.consumer, "consumer-new": Self.consumer, "driver-1": Self.driver]
        return FleetEngineVerifier(
            keys: VerificationKeys(keySet: try! JWKSet(keys: keys), issuers: issuers), audience: FleetEngineClaims.defaultAudience)
    }()

    /// A token for trip-1 claiming `account`, signed without a kid by `key`'s private half.
    static func keyless(as account: String, signedBy key: JWSKey, lifetime: Int64 = 3600) throws -> String {
        let unnamed = try JWSKey.pem(try key.privateKeyPEM(), algorithm: .rs256, keyID: nil)
        var claims = FleetEngineClaims.claims(
            serviceAccount: account, audience: FleetEngineClaims.defaultAudience, context: trip, issuedAt: now, lifetime: 3600)
        claims["exp"] = .integer(now + lifetime)
        let token = try JWSSigner(key: unnamed).sign(claims: claims)
        #expect(JWTVerifier.decodeUnverified(token).header?["kid"] == nil)
        return token
    }

    func rejection(_ token: String) -> String? {
        do {
            _ = try verifier.verify(token, for: Self.trip, now: Self.now)
            return nil
        } catch {
            return error.reason.rawValue
        }
    }

    @Test func aKeylessTokenVerifiesWithAnyKeyOfItsIssuerAndSaysWhichOne() throws {
        for key in Self.consumerKeys {
            let verified = try verifier.verify(try Self.keyless(as: Self.consumer, signedBy: key), for: Self.trip, now: Self.now)
            #expect(verified.keyID == nil)
            #expect(verified.key.keyID == key.keyID)
        }
    }

    @Test func anotherAccountsKeyIsNeverTried() throws {
        // Signed by the driver account's key but claiming the consumer account: only the consumer keys are tried.
        #expect(rejection(try Self.keyless(as: Self.consumer, signedBy: Self.driverKey)) == "bad_signature")
        // Claiming an account no key is bound to: refused before any signature check.
        #expect(rejection(try Self.keyless(as: "stranger@acme.iam.gserviceaccount.com", signedBy: Self.driverKey)) == "wrong_issuer")
        // A key of nobody's signs nothing.
        #expect(rejection(try Self.keyless(as: Self.consumer, signedBy: try JWSKey.generate(.rs256))) == "bad_signature")
    }

    @Test func everyOtherCheckStillApplies() throws {
        #expect(rejection(try Self.keyless(as: Self.consumer, signedBy: Self.consumerKeys[0], lifetime: 7200)) == "lifetime_too_long")
        // alg none without a kid, claiming the consumer account.
        let header = Base64URL.encode(Array(#"{"alg":"none","typ":"JWT"}"#.utf8))
        let payload = try Self.keyless(as: Self.consumer, signedBy: Self.consumerKeys[0]).split(separator: ".")[1]
        #expect(rejection("\(header).\(payload).") != nil)
        // A named kid still picks exactly that key, whoever the token claims.
        let named = try JWSSigner(key: Self.driverKey).sign(
            claims: FleetEngineClaims.claims(
                serviceAccount: Self.consumer, audience: FleetEngineClaims.defaultAudience, context: Self.trip, issuedAt: Self.now,
                lifetime: 3600))
        #expect(rejection(named) == "wrong_issuer")
    }
}
