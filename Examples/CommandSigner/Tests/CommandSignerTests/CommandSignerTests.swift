import CommandSigner
import Foundation
import Testing
import TokenBackendConformance
import TokenGateCore

/// The plugin against the real `openssl` command, with a key the test generates.
@Suite struct CommandSignerTests {
    static let account = "fleet-signer@acme-rides.iam.gserviceaccount.com"

    /// A folder with a fresh RSA key pair (signer.pem, signer.pub.pem), removed by `body`'s end.
    static func withKeys(_ body: (String) async throws -> Void) async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("command-signer-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        try openssl(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", "signer.pem"], in: directory)
        try openssl(["pkey", "-in", "signer.pem", "-pubout", "-out", "signer.pub.pem"], in: directory)
        try await body(directory)
    }

    static func openssl(_ arguments: [String], in directory: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.standardError = FileHandle.nullDevice  // genpkey's progress dots
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0, "openssl \(arguments.joined(separator: " ")) failed")
    }

    static func section(command: String = "[openssl, dgst, -sha256, -sign, signer.pem]", keyID: String = "hsm-key-1") -> String {
        """
        type: command-signer
        serviceAccount: \(account)
        keyId: \(keyID)
        command: \(command)
        tokenTypes: [consumer, driver]
        tokenLifetime: { default: 1h, consumer: 15m }
        verify:
          - keyFile: signer.pub.pem
            keyId: hsm-key-1
            serviceAccount: \(account)
        """
    }

    @Test func meetsTheBackendContract() async throws {
        try await Self.withKeys { directory in
            let conformance = BackendConformance(
                factory: CommandSignerFactory(), section: Self.section(), directory: directory,
                failingSection: Self.section(command: "[openssl, dgst, -sha256, -sign, missing.pem]"),
                invalidSection: (yaml: Self.section(keyID: "another-key"), key: "keyId"))
            let violations = await conformance.violations()
            #expect(violations.isEmpty, "\(violations)")
        }
    }

    /// A backend whose command sleeps instead of signing.
    static func sleeper(in directory: String, timeout: String) async throws -> any TokenBackend {
        let section = Self.section(command: "[sleep, '10']") + "\ntimeout: \(timeout)"
        let file = ConfigFile(path: "\(directory)/config.yaml", environment: [:])
        return try await CommandSignerFactory().makeBackend(
            BackendContext(
                provider: ProviderID("acme-rides")!, section: try ConfigNode.parse(Array(section.utf8), file: file),
                audience: FleetEngineClaims.defaultAudience, clock: .system, logger: .init(label: "test")))
    }

    static let request = TokenRequest(provider: ProviderID("acme-rides")!, context: .trip(ContextID("trip-1")!))

    /// A program that does not answer in time is stopped, and the caller told `backend_timeout`.
    @Test func stopsACommandThatTakesTooLong() async throws {
        try await Self.withKeys { directory in
            let backend = try await Self.sleeper(in: directory, timeout: "200ms")
            let started = ContinuousClock.now
            let error = await #expect(throws: TokenGateError.self) { try await backend.issue(Self.request) }
            #expect(error?.code == .backendTimeout)
            #expect(ContinuousClock.now - started < .seconds(5), "the 10 s sleep was not stopped")
        }
    }

    /// A caller that gives up (a reload, a client gone) stops the program it waits for.
    @Test func stopsTheCommandOfACancelledCall() async throws {
        try await Self.withKeys { directory in
            let backend = try await Self.sleeper(in: directory, timeout: "30s")
            let started = ContinuousClock.now
            let call = Task { try await backend.issue(Self.request) }
            try await Task.sleep(for: .milliseconds(200))
            call.cancel()
            await #expect(throws: CancellationError.self) { try await call.value }
            #expect(ContinuousClock.now - started < .seconds(5), "the 10 s sleep was not stopped")
        }
    }
}
