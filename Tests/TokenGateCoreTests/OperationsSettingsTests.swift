import Foundation
import Logging
import Testing
import TokenGateCore
import TokenGateCoreTesting

/// `server.admin`, `server.tls`, `server.logFormat`/`logLevel` and `audit:`: defaults, values, and located errors.
@Suite struct OperationsSettingsTests {
    static let provider = ServerAndCORSSettingsTests.provider

    let directory: String

    init() throws {
        directory = try TemporaryDirectory(prefix: "tokengate-ops").path
    }

    private func parse(_ text: String) throws -> GatewayConfiguration {
        let file = ConfigFile(path: "\(directory)/config.yaml", environment: [:])
        return try ConfigurationParser().parse(ConfigNode.parse(Array(text.utf8), file: file))
    }

    private func error(_ text: String) -> String {
        do {
            _ = try parse(text)
            return "no error"
        } catch {
            return "\(error)".replacingOccurrences(of: directory + "/", with: "")
        }
    }

    /// A self-signed certificate for 127.0.0.1 and its key, made by the `openssl` command, as `<name>.pem`/`.key`.
    private func makeCertificate(_ name: String) async throws {
        let (status, output) = try await ChildProcess.run(
            "openssl",
            [
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(directory)/\(name).key",
                "-out", "\(directory)/\(name).pem", "-days", "1", "-subj", "/CN=127.0.0.1",
            ])
        #expect(status == 0, "\(output)")
        chmod("\(directory)/\(name).key", 0o600)
    }

    @Test func theAdminListenerIsOnLoopbackByDefaultAndLogsAreText() throws {
        let server = try parse(Self.provider).server
        #expect(server.admin == AdminListener(host: "127.0.0.1", port: 9464))
        #expect(server.tls == nil)
        #expect(server.logFormat == .text)
        #expect(server.logLevel == .info)
        let configuration = try parse(Self.provider)
        #expect(configuration.audit == nil)
    }

    @Test func operationsSettingsAreRead() throws {
        let text = """
            server:
              admin: { host: 0.0.0.0, port: 9100 }
              logFormat: json
              logLevel: debug
            audit: { path: logs/audit.jsonl }

            """ + Self.provider
        let configuration = try parse(text)
        #expect(configuration.server.admin == AdminListener(host: "0.0.0.0", port: 9100))
        #expect(configuration.server.logFormat == .json)
        #expect(configuration.server.logLevel == .debug)
        #expect(configuration.audit == .file(path: "\(directory)/logs/audit.jsonl"))
        #expect(try parse("audit: { stdout: true }\n" + Self.provider).audit == .standardOutput)
        #expect(try parse("server:\n  admin: { enabled: false }\n" + Self.provider).server.admin == nil)
    }

    @Test(arguments: [
        ("server:\n  logFormat: xml\n", "config.yaml:2:14: server.logFormat: must be text or json, got 'xml'"),
        (
            "server:\n  logLevel: loud\n",
            "config.yaml:2:13: server.logLevel: must be trace, debug, info, notice, warning, error or critical, got 'loud'"
        ),
        ("server:\n  port: 9464\n", "config.yaml:2:9: server.port: the admin listener must not share the public port 9464"),
        ("server:\n  admin: { port: 70000 }\n", "config.yaml:2:18: server.admin.port: must be between 0 and 65535"),
        ("audit: { path: a, stdout: true }\n", "config.yaml:1:8: audit: give either path or stdout, not both"),
        ("audit: {}\n", "config.yaml:1:8: audit: give a path (a file) or stdout: true"),
        ("server:\n  tls: { certificateFile: missing.pem }\n", "config.yaml:2:8: server.tls.privateKeyFile: missing required key"),
    ])
    func badOperationsSettingsAreLocated(text: String, expected: String) {
        #expect(error(text + Self.provider) == expected)
    }

    @Test func aCertificateThatIsNotForItsKeyIsALocatedError() async throws {
        try await makeCertificate("one")
        try await makeCertificate("two")
        let good = try parse("server:\n  tls: { certificateFile: one.pem, privateKeyFile: one.key, minimumVersion: \"1.3\" }\n" + Self.provider)
        #expect(good.server.tls?.minimumVersion == .v1_3)
        #expect((good.server.tls?.notAfter ?? 0) > Int64(Date().timeIntervalSince1970))
        #expect(
            error("server:\n  tls: { certificateFile: one.pem, privateKeyFile: two.key }\n" + Self.provider)
                == "config.yaml:2:27: server.tls.certificateFile: the certificate is not for the key in privateKeyFile")
        #expect(
            error("server:\n  tls: { certificateFile: one.key, privateKeyFile: one.key }\n" + Self.provider).hasPrefix(
                "config.yaml:2:27: server.tls.certificateFile: not a usable certificate and key"))
        chmod("\(directory)/one.key", 0o644)
        #expect(error("server:\n  tls: { certificateFile: one.pem, privateKeyFile: one.key }\n" + Self.provider).contains("chmod 600"))
        try? FileManager.default.removeItem(atPath: directory)
    }
}

/// `tracing:`: off unless the section is there, read in full, and every mistake located.
@Suite struct TracingSettingsTests {
    static let provider = ServerAndCORSSettingsTests.provider

    private func parse(_ text: String) throws -> GatewayConfiguration {
        let file = ConfigFile(path: "/etc/tokengate/config.yaml", environment: ["OTLP_TOKEN": "s3cret"])
        return try ConfigurationParser().parse(ConfigNode.parse(Array((text + Self.provider).utf8), file: file))
    }

    private func error(_ text: String) -> String {
        do {
            _ = try parse(text)
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    @Test func tracingIsOffWithoutTheSection() throws {
        #expect(try parse("").tracing == nil)
    }

    @Test func theSectionIsReadWithItsDefaults() throws {
        let minimal = try #require(try parse("tracing: { otlp: { endpoint: http://127.0.0.1:4318/v1/traces } }\n").tracing)
        #expect(minimal == TracingSettings(endpoint: "http://127.0.0.1:4318/v1/traces"))
        #expect(minimal.serviceName == "tokengate" && minimal.sampleRatio == 1 && minimal.timeout == .seconds(10))
        let full = try #require(
            try parse(
                """
                tracing:
                  otlp:
                    endpoint: https://collector.internal/v1/traces
                    headers: { Authorization: "Bearer ${OTLP_TOKEN}" }
                    timeout: 3s
                  serviceName: tokengate-eu
                  sampleRatio: 0.25

                """
            ).tracing)
        #expect(
            full
                == TracingSettings(
                    endpoint: "https://collector.internal/v1/traces", headers: ["authorization": "Bearer s3cret"], timeout: .seconds(3),
                    serviceName: "tokengate-eu", sampleRatio: 0.25))
    }

    @Test func mistakesAreLocated() {
        let file = "/etc/tokengate/config.yaml"
        #expect(error("tracing: { serviceName: x }\n") == "\(file):1:10: tracing.otlp: missing required key")
        #expect(
            error("tracing: { otlp: { endpoint: ftp://collector/v1/traces } }\n").hasPrefix(
                "\(file):1:30: tracing.otlp.endpoint: must be an http or https URL"))
        #expect(
            error("tracing: { otlp: { endpoint: http://user:pw@collector/v1/traces } }\n").contains(
                "tracing.otlp.endpoint: must be an http or https URL"))
        #expect(
            error("tracing: { otlp: { endpoint: http://c/v1/traces, timeout: 2m } }\n").contains("tracing.otlp.timeout: must be between 1s and 1m"))
        #expect(
            error("tracing: { otlp: { endpoint: http://c/v1/traces, headers: { \"bad name\": x } } }\n").contains(
                "'bad name' is not an HTTP header name"))
        #expect(
            error("tracing: { otlp: { endpoint: http://c/v1/traces }, sampleRatio: 1.5 }\n").contains(
                "tracing.sampleRatio: must be a number from 0 to 1"))
        #expect(error("tracing: { otlp: { endpoint: http://c/v1/traces }, exporter: grpc }\n").contains("exporter"))
    }
}
