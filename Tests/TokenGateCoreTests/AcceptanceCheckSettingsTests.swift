import Logging
import Testing
import TokenGateCore
import TokenGateCoreTesting

/// `acceptanceCheck:` of a provider: defaults, values, located errors (a type no read-only call checks, a type the
/// backend does not issue), and how Fleet Engine's answers read as verdicts.
@Suite struct AcceptanceCheckSettingsTests {
    private func yaml(_ check: String) -> String {
        """
        providers:
          acme-rides:
            backend: { type: inert }
            acceptanceCheck: \(check)
            clients:
              - { name: app, type: api-key, keySha256: \(String(repeating: "ab", count: 32)), allow: { consumer: any } }
        """
    }

    private func parse(_ check: String) throws -> AcceptanceCheckSettings? {
        try ConfigurationParser().parse(ConfigNode.parse(Array(yaml(check).utf8), file: ConfigFile(path: "config.yaml", environment: [:])))
            .providers[ProviderID("acme-rides")!]?.acceptanceCheck
    }

    @Test func offUnlessConfiguredAndEveryDefaultIsFleetEnginesOwn() throws {
        let settings = try #require(try parse("{ tokenTypes: [consumer] }"))
        #expect(settings.tokenTypes == [.consumer])
        #expect(settings.interval == .seconds(600) && settings.timeout == .seconds(10))
        #expect(settings.endpoint == "https://fleetengine.googleapis.com")
        #expect(settings.contextID.rawValue == "tokengate-acceptance-check")
        let read = try #require(
            try parse("{ tokenTypes: [driver, consumer], every: 90s, id: probe-1, endpoint: \"http://127.0.0.1:9/\", timeout: 3s }"))
        #expect(read.tokenTypes == [.driver, .consumer] && read.interval == .seconds(90) && read.contextID.rawValue == "probe-1")
        #expect(read.endpoint == "http://127.0.0.1:9" && read.timeout == .seconds(3))
    }

    @Test(arguments: [
        ("{ tokenTypes: [batch-tasks] }", "batch-tasks tokens only create tasks"),
        ("{ tokenTypes: [rider] }", "unknown token type 'rider'"),
        ("{ tokenTypes: [consumer, consumer] }", "consumer is listed twice"),
        ("{ tokenTypes: [] }", "list at least one token type"),
        ("{ every: 10m }", "acceptanceCheck.tokenTypes: missing required key"),
        ("{ tokenTypes: [consumer], every: 0s }", "must be between 1s and 24h"),
        ("{ tokenTypes: [consumer], timeout: 2m }", "must be between 1s and 60s"),
        ("{ tokenTypes: [consumer], id: \"a/b\" }", "is not an ID Fleet Engine accepts"),
        ("{ tokenTypes: [consumer], endpoint: \"http://fleetengine.googleapis.com\" }", "plain http is allowed only to a loopback host"),
        ("{ tokenTypes: [consumer], everyDay: true }", "unknown key"),
    ])
    func aSettingThatCannotHoldIsALocatedError(check: String, message: String) {
        do {
            _ = try parse(check)
            Issue.record("parsed \(check)")
        } catch {
            #expect("\(error)".contains("config.yaml:4:"), "\(error)")
            #expect("\(error)".contains("acceptanceCheck"), "\(error)")
            #expect("\(error)".contains(message), "\(error)")
        }
    }

    @Test func aTypeTheBackendDoesNotIssueIsRefusedAtItsLine() async throws {
        let assembler = GatewayAssembler(
            registry: BackendRegistry([InertBackendFactory()]), environment: [:], clock: ManualClock(wallSeconds: 1_700_000_000).gatewayClock,
            logger: Logger(label: "acceptance", factory: { _ in SwiftLogNoOpLogHandler() }), jwksFetcher: ScriptedJWKSFetcher(.failure("none")))
        do {
            _ = try await assembler.build(
                bytes: Array(yaml("{ tokenTypes: [consumer, driver] }").utf8), file: ConfigFile(path: "config.yaml", environment: [:]))
            Issue.record("built")
        } catch {
            #expect("\(error)".contains("config.yaml:4:"), "\(error)")
            #expect("\(error)".contains("the backend does not issue driver tokens; it issues consumer"), "\(error)")
        }
    }

    @Test(arguments: [
        (404, #"{"error": {"code": 404, "message": "Trip not found", "status": "NOT_FOUND"}}"#, "accepted", "404 NOT_FOUND"),
        (200, #"{"name": "providers/acme-rides/trips/t"}"#, "accepted", "200"),
        (401, #"{"error": {"code": 401, "status": "UNAUTHENTICATED"}}"#, "refused", "401 UNAUTHENTICATED"),
        (403, #"{"error": {"code": 403, "message": "denied", "status": "PERMISSION_DENIED"}}"#, "refused", "403 PERMISSION_DENIED"),
        (403, "<html>no</html>", "refused", "403"),
        (429, #"{"error": {"code": 429, "status": "RESOURCE_EXHAUSTED"}}"#, "unknown", "429 RESOURCE_EXHAUSTED"),
        (503, "", "unknown", "503"),
        (302, "", "unknown", "302"),
    ])
    func fleetEnginesAnswerReadsAsAVerdict(status: Int, body: String, verdict: String, summary: String) {
        let outcome = AcceptanceOutcome(response: FleetEngineResponse(status: status, body: Array(body.utf8)))
        #expect(outcome.verdict.rawValue == verdict)
        #expect(outcome.summary == summary)
    }

    @Test func anAnswersTextIsMadeSafeToLog() {
        let hostile =
            #"{"error": {"code": 403, "message": "line\nbreak \u001b[31m \#(String(repeating: "x", count: 500))", "status": "permission denied!"}}"#
        let outcome = AcceptanceOutcome(response: FleetEngineResponse(status: 403, body: Array(hostile.utf8)))
        #expect(outcome.googleStatus == nil)
        #expect(!outcome.detail.contains("\n") && !outcome.detail.contains("\u{1B}"))
        #expect(outcome.detail.count <= 201 && outcome.detail.hasPrefix("line?break ?[31m"))
    }
}
