import RESP
import RESPTesting
import Testing

/// `rediss://`: the chain is verified against the configured CA and the certificate must name the server.
@Suite(.enabled(if: RedisServer.supportsTLS, "this redis-server was built without TLS: the TLS tests cannot run"))
struct TLSTests {
    /// A TLS server whose certificate names `subjectAltName`, from a CA the client is configured to trust.
    static func withTLSServer(
        certifying subjectAltName: String = "DNS:localhost", _ body: (RedisServer) async throws -> Void
    ) async throws {
        let files = try TemporaryDirectory()
        defer { files.remove() }
        let certificates = try await TestCertificates.make(in: files, subjectAltName: subjectAltName)
        try await RedisServer.with(.init(tls: certificates)) { server async throws in try await body(server) }
    }

    @Test func aServerWithATrustedCertificateForItsNameIsReached() async throws {
        try await Self.withTLSServer { server async throws in
            try await server.withClient({ $0.password = nil }) { client async throws in
                #expect(try await client.ping() == "PONG")
                #expect(try await client.set("over-tls", to: "yes"))
            }
        }
    }

    /// With no server name configured the address itself is checked, against the certificate's IP addresses.
    @Test func anIPAddressIsCheckedAgainstTheCertificatesAddresses() async throws {
        try await Self.withTLSServer(certifying: "IP:127.0.0.1") { server async throws in
            try await server.withClient({ $0.tls?.serverName = nil }) { client async throws in
                #expect(try await client.ping() == "PONG")
            }
        }
        try await Self.withTLSServer(certifying: "DNS:localhost") { server async throws in
            try await server.withClient({ $0.tls?.serverName = nil }) { client async throws in
                let error = await #expect(throws: RESPError.self) { try await client.ping() }
                guard case .connectionFailed(let reason) = error else {
                    Issue.record("\(String(describing: error))")
                    return
                }
                #expect(reason.contains("ostname"))
            }
        }
    }

    @Test func aCertificateForAnotherNameIsRefused() async throws {
        try await Self.withTLSServer { server async throws in
            try await server.withClient({ $0.tls?.serverName = "redis.example.com" }) { client async throws in
                let error = await #expect(throws: RESPError.self) { try await client.ping() }
                guard case .connectionFailed(let reason) = error else {
                    Issue.record("\(String(describing: error))")
                    return
                }
                #expect(reason.contains("ostname"))
            }
        }
    }

    @Test func aCertificateFromAnUntrustedCAIsRefused() async throws {
        try await Self.withTLSServer { server async throws in
            try await server.withClient({ $0.tls?.trustRoots = .system }) { client async throws in
                let error = await #expect(throws: RESPError.self) { try await client.ping() }
                guard case .connectionFailed = error else {
                    Issue.record("\(String(describing: error))")
                    return
                }
            }
        }
    }

    @Test func plainTextAgainstATLSPortFails() async throws {
        try await Self.withTLSServer { server async throws in
            try await server.withClient({
                $0.tls = nil
                $0.commandTimeout = .milliseconds(500)
            }) { client async throws in
                _ = await #expect(throws: RESPError.self) { try await client.ping() }
            }
        }
    }
}
