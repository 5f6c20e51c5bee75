import Foundation

/// A CA and a server certificate, made by the `openssl` command at test time (no key is committed), valid for a day.
package struct TestCertificates: Sendable {
    package let caCertificate: String
    package let serverCertificate: String
    package let serverKey: String

    /// Writes the files into `directory`; the server certificate names `subjectAltName` (`DNS:localhost`,
    /// `IP:127.0.0.1`).
    package static func make(in directory: TemporaryDirectory, subjectAltName: String) async throws -> TestCertificates {
        let path = directory.path
        try "subjectAltName=\(subjectAltName)\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n"
            .write(toFile: "\(path)/server.ext", atomically: true, encoding: .utf8)
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
        try await openssl(["req", "-x509"] + ec + ["-keyout", "ca.key", "-out", "ca.crt", "-days", "1", "-subj", "/CN=RESP test CA"], in: path)
        try await openssl(["req"] + ec + ["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=localhost"], in: path)
        try await openssl(
            [
                "x509", "-req", "-in", "server.csr", "-CA", "ca.crt", "-CAkey", "ca.key", "-CAcreateserial", "-out",
                "server.crt", "-days", "1", "-extfile", "server.ext",
            ], in: path)
        return TestCertificates(
            caCertificate: "\(path)/ca.crt", serverCertificate: "\(path)/server.crt", serverKey: "\(path)/server.key")
    }

    private static func openssl(_ arguments: [String], in directory: String) async throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.standardInput = FileHandle.nullDevice
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(30)
        while process.isRunning, clock.now < deadline { try await Task.sleep(for: .milliseconds(10)) }
        if process.isRunning {
            process.terminate()
            throw HarnessError("openssl \(arguments.first ?? "") did not finish within 30 s")
        }
        guard process.terminationStatus == 0 else {
            throw HarnessError("openssl \(arguments.joined(separator: " ")) exited \(process.terminationStatus)")
        }
    }
}
