import RESP
import RESPTesting
import Testing

/// AUTH on every new connection: the default user's password, an ACL user, RESP3's `HELLO 3 AUTH`.
@Suite struct AuthTests {
    @Test func theRightPasswordIsAccepted() async throws {
        try await RedisServer.with(.init(password: "s3cret")) { server async throws in
            try await server.withClient({ $0.password = "s3cret" }) { client async throws in #expect(try await client.ping() == "PONG") }
        }
    }

    @Test func aWrongPasswordIsAClearAuthError() async throws {
        try await RedisServer.with(.init(password: "s3cret")) { server async throws in
            try await server.withClient({ $0.password = "wrong" }) { client async throws in
                let error = await #expect(throws: RESPError.self) { try await client.ping() }
                #expect(error?.serverCode == "WRONGPASS")
            }
        }
    }

    @Test func noPasswordAgainstAProtectedServerIsNOAUTH() async throws {
        try await RedisServer.with(.init(password: "s3cret")) { server async throws in
            try await server.withClient { client async throws in
                let error = await #expect(throws: RESPError.self) { try await client.ping() }
                #expect(error?.serverCode == "NOAUTH")
            }
        }
    }

    @Test(arguments: [RESPConfiguration.ProtocolVersion.resp2, .resp3])
    func anACLUserWithItsPasswordWorks(version: RESPConfiguration.ProtocolVersion) async throws {
        try await RedisServer.with(.init(users: [("gateway", "gw-pass")])) { server async throws in
            try await server.withClient({
                $0.username = "gateway"
                $0.password = "gw-pass"
                $0.protocolVersion = version
            }) { client async throws in
                #expect(try await client.send(["ACL", "WHOAMI"]).string == "gateway")
            }
            try await server.withClient({
                $0.username = "gateway"
                $0.password = "not-it"
                $0.protocolVersion = version
            }) { client async throws in
                let error = await #expect(throws: RESPError.self) { try await client.ping() }
                #expect(error?.serverCode == "WRONGPASS")
            }
        }
    }

    /// A URL carries the credentials; the password may come separately (from the environment).
    @Test func credentialsFromTheURLAndSeparately() async throws {
        try await RedisServer.with(.init(users: [("gateway", "gw-pass")])) { server async throws in
            var configuration = try RESPConfiguration(url: "redis://gateway@127.0.0.1:\(server.port)/0")
            configuration.password = "gw-pass"
            let client = try RESPClient(configuration: configuration)
            #expect(try await client.send(["ACL", "WHOAMI"]).string == "gateway")
            await client.shutdown()
        }
    }
}
