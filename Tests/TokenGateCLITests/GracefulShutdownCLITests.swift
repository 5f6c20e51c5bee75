import Foundation
import JOSE
import OpenSSLPrimitives
import Testing
import TokenGateTesting

/// SIGTERM to a real `tokengate serve`, as an orchestrator stops a pod: readiness fails first (the admin listener
/// closes), a request already in flight is answered, then the process exits 0.
@Suite struct GracefulShutdownCLITests {
    static let runtime = "tokengate@acme-rides.iam.gserviceaccount.com"
    static let consumer = "fleet-consumer@acme-rides.iam.gserviceaccount.com"
    static let apiKey = "tg_shutdown_key_0123456789"

    @Test func readinessFailsFirstThenTheRequestInFlightIsAnsweredThenTheProcessExits() async throws {
        try await GoogleStandIn.with { standIn in
            let state = try await standIn.control(
                """
                {"accounts": [{"email": "\(Self.runtime)", "exportKeyFile": true}, {"email": "\(Self.consumer)"}],
                 "grants": {"\(Self.runtime)": ["\(Self.consumer)"]}}
                """)
            let keyFile = try #require(state["accounts"]?.objectValue?[Self.runtime]?.objectValue?["keyFile"]?.stringValue)
            try await withCLI { cli in
                let digest = CLIFixtures.hex(try Digest.sha256(Array(Self.apiKey.utf8)))
                try cli.write(
                    "config.yaml",
                    """
                    server: { host: 127.0.0.1, port: 0 }
                    providers:
                      acme-rides:
                        backend:
                          type: google-iam
                          serviceAccounts: { consumer: \(Self.consumer) }
                          credentialsFile: \(keyFile)
                          timeout: 20s
                          endpoints:
                            iamCredentials: \(standIn.baseURL)
                            publicKeys: \(standIn.baseURL)/service_accounts/v1/jwk/{serviceAccount}
                        clients:
                          - { name: app, type: api-key, keySha256: \(digest), allow: { consumer: any } }
                    """)
                let serve = try await ServeProcess.start(cli, ["--config", "config.yaml"])
                let adminPort = try await serve.listeningAdminPort()
                let admin = RunningGateway.Endpoint(baseURL: "http://127.0.0.1:\(adminPort)")
                let gateway = RunningGateway.Endpoint(baseURL: "http://127.0.0.1:\(serve.port)")
                #expect(try await eventually { (try? await admin.get("/readyz").status) == 200 })

                // IAM takes 3 s for the next signature: the request is in flight while the process is told to stop.
                try await standIn.control(#"{"faults": {"signJwt": {"delayMs": 3000, "count": 1}}}"#)
                let inFlight = Task {
                    try await gateway.get("/v1/providers/acme-rides/tokens/consumer?tripId=trip-1", bearer: Self.apiKey)
                }
                // The stand-in took the fault as the call arrived: the request now waits on IAM.
                #expect(try await eventually { try await standIn.state()["faults"]?.objectValue?["signJwt"] == nil })
                kill(serve.pid, SIGTERM)
                // Readiness goes first: the admin listener stops answering while the request still waits on IAM.
                #expect(try await eventually(within: .seconds(2)) { (try? await admin.get("/readyz")) == nil })
                let answered = try await inFlight.value
                #expect(answered.status == 200, "\(answered.text)")
                #expect(try await eventually { !serve.process.isRunning })
                #expect(serve.process.terminationStatus == 0, "\(serve.stderr)")
            }
        }
    }
}
