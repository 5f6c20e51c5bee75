import Foundation
import JOSE
import Testing
@testable import TokenGateCore

@Suite struct AuthCallerDirectoryTests {
    let clock = ManualTestClock()
    let idp: TestIdentityProvider
    let directory: CallerDirectory

    init() throws {
        idp = try TestIdentityProvider()
        let acme = CallerAuthenticator(
            provider: AuthFixtures.acme,
            clients: [
                try AuthFixtures.apiKeyClient("acme-backend", key: "tg_acme"),
                try AuthFixtures.apiKeyClient("acme-old", key: "tg_acme-old", isRevoked: true), idp.client(),
            ],
            clock: clock.clock)
        let zoom = CallerAuthenticator(
            provider: AuthFixtures.zoom, clients: [try AuthFixtures.apiKeyClient("zoom-backend", key: "tg_zoom")],
            clock: clock.clock)
        directory = CallerDirectory([AuthFixtures.acme: acme, AuthFixtures.zoom: zoom])
    }

    @Test func apiKeyOfAnotherProviderIsForbiddenNotUnauthenticated() throws {
        let error = authError { _ = try directory.authenticate(authorization: "Bearer tg_acme", at: AuthFixtures.zoom) }
        #expect(error?.code == .forbidden)
        #expect(error?.reason.contains("another provider (acme-rides)") == true)
        #expect(directory.isKnownElsewhere("Bearer tg_acme", than: AuthFixtures.zoom))
        #expect(directory.owner(of: "Bearer tg_acme", otherThan: AuthFixtures.zoom) == AuthFixtures.acme)
        #expect(try directory.authenticate(authorization: "Bearer tg_acme", at: AuthFixtures.acme).name == "acme-backend")
    }

    @Test func sessionTokenOfAnotherProviderIsForbidden() throws {
        let header = "Bearer " + (try idp.sessionToken(now: clock.wallSeconds, ["trips": ["trip-1"]]))
        let error = authError { _ = try directory.authenticate(authorization: header, at: AuthFixtures.zoom) }
        #expect(error?.code == .forbidden)
    }

    @Test(arguments: [nil, "", "Bearer", "Bearer tg_nobody", "Bearer tg_acme-old"] as [String?])
    func unknownMissingMalformedOrRevokedStayUnauthenticated(header: String?) {
        let error = authError { _ = try directory.authenticate(authorization: header, at: AuthFixtures.zoom) }
        #expect(error?.code == .unauthenticated)
        #expect(!directory.isKnownElsewhere(header, than: AuthFixtures.zoom))
    }

    @Test func ownProviderFailureIsNotKnownElsewhere() throws {
        #expect(!directory.isKnownElsewhere("Bearer tg_acme", than: AuthFixtures.acme))
    }

    @Test func unknownProviderIsReported() {
        let error = authError { _ = try directory.authenticate(authorization: "Bearer tg_acme", at: ProviderID("nobody-here")!) }
        #expect(error?.code == .unknownProvider)
    }

    @Test func aCallerOfOneProviderIsForbiddenAtAnother() throws {
        let caller = try directory.authenticate(authorization: "Bearer tg_acme", at: AuthFixtures.acme)
        let zoom = try #require(directory.authenticators[AuthFixtures.zoom])
        #expect(authError { try zoom.authorize(caller, for: AuthFixtures.trip("trip-1")) }?.code == .forbidden)
    }
}

@Suite struct AuthConfigurationTests {
    @Test func clientsParsedFromYAMLAuthenticateAndAuthorize() throws {
        let clock = ManualTestClock()
        let idp = try TestIdentityProvider()
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("auth-\(UInt64.random(in: 0...UInt64.max))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let jwksPath = directory.appendingPathComponent("idp.jwks.json").path
        #expect(FileManager.default.createFile(atPath: jwksPath, contents: Data(try idp.jwks.publicJSON())))
        let yaml = """
            providers:
              acme-rides:
                audience: https://fleetengine.googleapis.com/
                backend: { type: static-key }
                clients:
                  - name: dispatch
                    type: api-key
                    keySha256: ${DISPATCH_KEY_SHA256}
                    allow: { consumer: any, server: any }
                  - name: rider-app
                    type: jwt
                    jwksFile: \(jwksPath)
                    issuer: \(TestIdentityProvider.issuer)
                    audience: [\(TestIdentityProvider.audience), other-app]
                    allow: { consumer: { claim: trips } }
            """
        let environment = ["DISPATCH_KEY_SHA256": HexBytes.encode(try Digest.sha256(Array("tg_dispatch".utf8)))]
        let file = ConfigFile(path: directory.appendingPathComponent("config.yaml").path, environment: environment)
        let configuration = try ConfigurationParser().parse(ConfigNode.parse(Array(yaml.utf8), file: file))
        let callers = CallerDirectory(configuration: configuration, clock: clock.clock)

        let dispatch = try callers.authenticate(authorization: "Bearer tg_dispatch", at: AuthFixtures.acme)
        let acme = try #require(callers.authenticators[AuthFixtures.acme])
        try acme.authorize(dispatch, for: .fleet)

        let token = try idp.sessionToken(now: clock.wallSeconds, ["trips": ["trip-1"]])
        let rider = try callers.authenticate(authorization: "Bearer " + token, at: AuthFixtures.acme)
        try acme.authorize(rider, for: AuthFixtures.trip("trip-1"))
        #expect(authError { try acme.authorize(rider, for: AuthFixtures.trip("trip-2")) }?.code == .forbidden)
        #expect(authError { try acme.authorize(rider, for: .fleet) }?.code == .forbidden)
    }
}
