import Foundation
import JOSE
import Testing
import TokenGateTesting

/// `check-config --online`: a google-iam backend asks IAM (the stand-in) once per account whether the gateway may
/// sign as it, and says per account what is missing; a static key is looked up among the keys Google publishes for
/// its account (`keyHealth.checkPublished`).
@Suite struct CheckConfigOnlineCLITests {
    static let runtime = "tokengate@acme-rides.iam.gserviceaccount.com"
    static let consumer = "fleet-consumer@acme-rides.iam.gserviceaccount.com"
    static let driver = "fleet-driver@acme-rides.iam.gserviceaccount.com"

    @Test func namesTheAccountWhosePermissionIsMissingAndExits3() async throws {
        try await GoogleStandIn.with { standIn in
            let state = try await standIn.control(
                """
                {"accounts": [{"email": "\(Self.runtime)", "exportKeyFile": true}, {"email": "\(Self.consumer)"}, {"email": "\(Self.driver)"}],
                 "grants": {"\(Self.runtime)": ["\(Self.driver)"]}}
                """)
            let keyFile = try #require(state["accounts"]?.objectValue?[Self.runtime]?.objectValue?["keyFile"]?.stringValue)
            try await withCLI { cli in
                try cli.write(
                    "config.yaml",
                    """
                    providers:
                      acme-rides:
                        backend:
                          type: google-iam
                          serviceAccounts: { consumer: \(Self.consumer), driver: \(Self.driver) }
                          credentialsFile: \(keyFile)
                          endpoints:
                            iamCredentials: \(standIn.baseURL)
                            publicKeys: \(standIn.baseURL)/service_accounts/v1/jwk/{serviceAccount}
                        clients:
                          - { name: app, type: api-key, keySha256: \(String(repeating: "ab", count: 32)), allow: { consumer: any } }
                    """)
                let offline = try await cli.run(["check-config", "config.yaml"])
                #expect(offline.status == 0, "\(offline)")
                #expect(offline.stdout.contains("google-iam") && offline.stdout.contains("service account \(Self.runtime)"), "\(offline)")
                #expect(try await standIn.calls(kind: "signJwt") == 0)

                let refused = try await cli.run(["check-config", "--online", "config.yaml"])
                #expect(refused.status == 3, "\(refused)")
                #expect(refused.stdout.contains("online:   ok: credentials"), "\(refused)")
                #expect(refused.stdout.contains("online:   ok: \(Self.driver): may sign (driver)"), "\(refused)")
                let missing = refused.stdout.split(separator: "\n").first { $0.contains("FAILED: \(Self.consumer)") }
                #expect(missing?.contains("iam.serviceAccounts.signJwt") == true, "\(refused)")
                #expect(missing?.contains("roles/iam.serviceAccountTokenCreator") == true, "\(refused)")
                #expect(refused.stderr.contains("1 online check failed"), "\(refused)")
                #expect(try await standIn.calls(kind: "signJwt") == 2)

                try await standIn.control(#"{"grants": {"\#(Self.runtime)": ["\#(Self.consumer)", "\#(Self.driver)"]}}"#)
                let granted = try await cli.run(["check-config", "--online", "config.yaml"])
                #expect(granted.status == 0, "\(granted)")
                #expect(!granted.stdout.contains("FAILED"), "\(granted)")
            }
        }
    }

    @Test func aStaticKeyGoogleNoLongerListsFailsTheOnlineCheckWithExit3() async throws {
        try await GoogleStandIn.with { standIn in
            let state = try await standIn.control(#"{"accounts": [{"email": "\#(Self.consumer)", "exportKeyFile": true}]}"#)
            let keyFile = try #require(state["accounts"]?.objectValue?[Self.consumer]?.objectValue?["keyFile"]?.stringValue)
            let kid = try ServiceAccountKey(json: Array(try Data(contentsOf: URL(fileURLWithPath: keyFile)))).privateKeyID
            try await withCLI { cli in
                try cli.write(
                    "config.yaml",
                    """
                    providers:
                      acme-rides:
                        keyHealth: { checkPublished: true, publishedKeysUrl: "\(standIn.baseURL)/service_accounts/v1/jwk/{serviceAccount}" }
                        backend:
                          type: static-key
                          keys:
                            consumer: [{ serviceAccountFile: \(keyFile), expires: 2099-12-31 }]
                        clients:
                          - { name: app, type: api-key, keySha256: \(String(repeating: "ab", count: 32)), allow: { consumer: any } }
                    """)
                let listed = try await cli.run(["check-config", "--online", "config.yaml"])
                #expect(listed.status == 0, "\(listed)")
                let line = "online:   ok: key \(kid) of \(Self.consumer): listed by Google; expires 2099-12-31T00:00:00Z"
                #expect(listed.stdout.contains(line), "\(listed)")

                // Disabled in Google Cloud: Fleet Engine would refuse every token the key signs.
                try await standIn.control(#"{"disableKeys": [{"email": "\#(Self.consumer)", "kid": "\#(kid)"}]}"#)
                let disabled = try await cli.run(["check-config", "--online", "config.yaml"])
                #expect(disabled.status == 3, "\(disabled)")
                #expect(disabled.stdout.contains("online:   FAILED: key \(kid) of \(Self.consumer): key_unpublished:"), "\(disabled)")
                #expect(disabled.stderr.contains("1 online check failed"), "\(disabled)")
            }
        }
    }

    /// `acceptanceCheck:` runs once under `--online`: a token of each checked type, minted and verified as `serve`
    /// would, used for one read at the Fleet Engine stand-in, which checks it against Google's published keys of the
    /// account. Accepted is ok; the role gone, the check fails with Fleet Engine's answer and exit status 3.
    @Test func theAcceptanceCheckRunsOnceAndARefusalExits3() async throws {
        try await GoogleStandIn.with { google in
            let state = try await google.control(#"{"accounts": [{"email": "\#(Self.consumer)", "exportKeyFile": true}]}"#)
            let keyFile = try #require(state["accounts"]?.objectValue?[Self.consumer]?.objectValue?["keyFile"]?.stringValue)
            try await FleetEngineStandIn.with { fleetEngine in
                try await fleetEngine.control(
                    """
                    {"accounts": {"\(Self.consumer)": {"jwksUrl": "\(google.baseURL)/service_accounts/v1/jwk/\(Self.consumer)"}},
                     "roles": {"acme-rides": {"\(Self.consumer)": ["roles/fleetengine.consumerSdkUser"]}}}
                    """)
                try await withCLI { cli in
                    try cli.write(
                        "config.yaml",
                        """
                        providers:
                          acme-rides:
                            acceptanceCheck: { tokenTypes: [consumer], endpoint: "\(fleetEngine.baseURL)" }
                            backend:
                              type: static-key
                              keys:
                                consumer: [{ serviceAccountFile: \(keyFile) }]
                            clients:
                              - { name: app, type: api-key, keySha256: \(String(repeating: "ab", count: 32)), allow: { consumer: any } }
                        """)
                    let offline = try await cli.run(["check-config", "config.yaml"])
                    #expect(offline.status == 0, "\(offline)")
                    #expect(try await fleetEngine.calls().isEmpty)

                    let accepted = try await cli.run(["check-config", "--online", "config.yaml"])
                    #expect(accepted.status == 0, "\(accepted)")
                    #expect(
                        accepted.stdout.contains("online:   ok: Fleet Engine acceptance of consumer tokens: accepted (404 NOT_FOUND)"), "\(accepted)")
                    #expect(try await fleetEngine.verdicts() == ["not_found"])

                    try await fleetEngine.control(#"{"roles": {"acme-rides": {"\#(Self.consumer)": []}}}"#)
                    let refused = try await cli.run(["check-config", "--online", "config.yaml"])
                    #expect(refused.status == 3, "\(refused)")
                    #expect(
                        refused.stdout.contains("online:   FAILED: Fleet Engine acceptance of consumer tokens: refused (403 PERMISSION_DENIED)"),
                        "\(refused)")
                    #expect(refused.stderr.contains("1 online check failed"), "\(refused)")
                }
            }
        }
    }
}
