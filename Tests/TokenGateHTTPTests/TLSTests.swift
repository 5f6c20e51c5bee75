import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import NIOSSL
import Testing
import TokenGateCore
import TokenGateTesting

/// HTTPS on the public listener with a certificate made at test time by the `openssl` command: a client that
/// trusts the test CA gets its token, plain HTTP to the TLS port fails cleanly, and a reload swaps the certificate
/// for new connections without dropping the open ones.
@Suite(.timeLimit(.minutes(5))) struct TLSTests {
    /// A CA and a server certificate for 127.0.0.1 that it signed, in `directory`: `<name>-ca.pem`, `<name>.pem`,
    /// `<name>.key` (mode 0600).
    static func makeCertificate(_ name: String, in directory: TemporaryDirectory) async throws {
        let path = directory.path
        try directory.write("\(name).ext", "subjectAltName=IP:127.0.0.1\n")
        try await openssl([
            "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(path)/\(name)-ca.key", "-out", "\(path)/\(name)-ca.pem",
            "-days", "1", "-subj", "/CN=TokenGate test CA \(name)",
        ])
        try await openssl([
            "req", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(path)/\(name).key", "-out", "\(path)/\(name).csr",
            "-subj", "/CN=127.0.0.1",
        ])
        try await openssl([
            "x509", "-req", "-in", "\(path)/\(name).csr", "-CA", "\(path)/\(name)-ca.pem", "-CAkey", "\(path)/\(name)-ca.key",
            "-CAcreateserial", "-out", "\(path)/\(name).pem", "-days", "1", "-extfile", "\(path)/\(name).ext",
        ])
        chmod("\(path)/\(name).key", 0o600)
    }

    static func openssl(_ arguments: [String]) async throws {
        let result = try await ChildProcess.run("openssl", arguments)
        guard result.status == 0 else { throw CocoaError(.executableLoad, userInfo: [NSLocalizedDescriptionKey: result.output]) }
    }

    /// Runs `body` with a client that trusts only the CA in `caFile` (none: the system's roots), shut down after.
    @discardableResult
    static func withClient<Result>(trusting caFile: String?, _ body: (HTTPClient) async throws -> Result) async throws -> Result {
        var tls = TLSConfiguration.makeClientConfiguration()
        if let caFile { tls.trustRoots = .certificates(try NIOSSLCertificate.fromPEMFile(caFile)) }
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls)
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 1
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        do {
            let result = try await body(client)
            try await client.shutdown()
            return result
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    static func get(_ client: HTTPClient, _ url: String, bearer: String? = nil) async throws -> (status: UInt, body: String) {
        var request = HTTPClientRequest(url: url)
        if let bearer { request.headers.add(name: "Authorization", value: "Bearer \(bearer)") }
        let response = try await client.execute(request, timeout: .seconds(10))
        return (response.status.code, String(buffer: try await response.body.collect(upTo: 1 << 20)))
    }

    @Test func anHTTPSRequestTrustingTheTestCASucceedsAndPlainHTTPFailsCleanly() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try await Self.makeCertificate("first", in: directory)
        let fixture = try GatewayFixture(
            server: "{ tls: { certificateFile: \(directory.path)/first.pem, privateKeyFile: \(directory.path)/first.key, minimumVersion: \"1.2\" } }")
        try await fixture.withGateway { gateway in
            #expect(gateway.baseURL.hasPrefix("https://"))
            try await Self.withClient(trusting: "\(directory.path)/first-ca.pem") { client in
                let token = try await Self.get(
                    client, "\(gateway.baseURL)/v1/providers/acme-rides/tokens/consumer?tripId=trip-1", bearer: GatewayFixture.apiKey)
                #expect(token.status == 200)
                #expect(token.body.contains("\"token\""))

                // Plain HTTP to the TLS port: no HTTP answer, the connection is closed, nothing else is affected.
                let plain = try await RawConnection.open(port: gateway.port, receiveTimeout: .seconds(5))
                _ = try await plain.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                let answer = try await plain.drain()
                #expect(answer.closed)
                #expect(!String(decoding: answer.bytes, as: UTF8.self).contains("HTTP/1.1"))
                #expect(try await Self.get(client, "\(gateway.baseURL)/healthz").status == 200)
            }

            // A client that does not trust the CA is refused by its own verification.
            try await Self.withClient(trusting: nil) { stranger in
                await #expect(throws: (any Error).self) { try await Self.get(stranger, "\(gateway.baseURL)/healthz") }
            }
        }
    }

    @Test func aReloadSwapsTheCertificateForNewConnectionsWithoutDroppingOpenOnes() async throws {
        let directory = try TemporaryDirectory()
        defer { directory.remove() }
        try await Self.makeCertificate("first", in: directory)
        try await Self.makeCertificate("second", in: directory)
        let certificate = "\(directory.path)/live.pem"
        let key = "\(directory.path)/live.key"
        try FileManager.default.copyItem(atPath: "\(directory.path)/first.pem", toPath: certificate)
        try FileManager.default.copyItem(atPath: "\(directory.path)/first.key", toPath: key)
        let fixture = try GatewayFixture(server: "{ tls: { certificateFile: \(certificate), privateKeyFile: \(key) } }")
        try await fixture.withGateway { gateway in
            // One pooled keep-alive connection, verified against the first CA.
            try await Self.withClient(trusting: "\(directory.path)/first-ca.pem") { old in
                try await Self.withClient(trusting: "\(directory.path)/second-ca.pem") { renewed in
                    #expect(try await Self.get(old, "\(gateway.baseURL)/healthz").status == 200)
                    await #expect(throws: (any Error).self) { try await Self.get(renewed, "\(gateway.baseURL)/healthz") }

                    // Renew: new files in place, then SIGHUP's reload.
                    for (source, target) in [("second.pem", certificate), ("second.key", key)] {
                        try FileManager.default.removeItem(atPath: target)
                        try FileManager.default.copyItem(atPath: "\(directory.path)/\(source)", toPath: target)
                    }
                    chmod(key, 0o600)
                    try await gateway.reloader.reload(trigger: "SIGHUP")

                    // New connections get the new certificate …
                    #expect(try await Self.get(renewed, "\(gateway.baseURL)/healthz").status == 200)
                    // … while the open connection goes on: a new one would fail, since it now presents the second CA's.
                    for _ in 0..<3 { #expect(try await Self.get(old, "\(gateway.baseURL)/healthz").status == 200) }
                }
            }
        }
    }
}
