import Foundation
import JOSE
import OpenSSLPrimitives
import Testing
import TokenGateCoreTesting

@testable import TokenGateCore

@Suite struct AuthConfigurationTests {
    @Test func clientsParsedFromYAMLAuthenticateAndAuthorize() throws {
        let clock = ManualClock(wallSeconds: 1_700_000_000)
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
                    allow: { consumer: any, server: whole-fleet }
                    allowServerTokens: true
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
        let settings = try #require(configuration.providers[AuthFixtures.acme])
        let acme = CallerAuthenticator(provider: AuthFixtures.acme, clients: settings.clients, clock: clock.gatewayClock)

        let dispatch = try acme.authenticate(authorization: "Bearer tg_dispatch")
        try acme.authorize(dispatch, for: .fleet)

        let token = try idp.sessionToken(now: clock.now, ["trips": ["trip-1"]])
        let rider = try acme.authenticate(authorization: "Bearer " + token)
        try acme.authorize(rider, for: AuthFixtures.trip("trip-1"))
        #expect(authError { try acme.authorize(rider, for: AuthFixtures.trip("trip-2")) }?.code == .forbidden)
        #expect(authError { try acme.authorize(rider, for: .fleet) }?.code == .forbidden)
    }

    @Test func aCallerOfOneProviderIsForbiddenAtAnother() throws {
        let clock = ManualClock(wallSeconds: 1_700_000_000)
        let acme = CallerAuthenticator(
            provider: AuthFixtures.acme, clients: [try AuthFixtures.apiKeyClient("acme-backend", key: "tg_acme")], clock: clock.gatewayClock)
        let zoom = CallerAuthenticator(
            provider: AuthFixtures.zoom, clients: [try AuthFixtures.apiKeyClient("zoom-backend", key: "tg_zoom")], clock: clock.gatewayClock)
        let caller = try acme.authenticate(authorization: "Bearer tg_acme")
        #expect(authError { try zoom.authorize(caller, for: AuthFixtures.trip("trip-1")) }?.code == .forbidden)
    }
}
