import RESP
import Testing

/// `redis://` and `rediss://` URLs: what they set, and a clear error for each way they can be wrong.
@Suite struct RESPConfigurationTests {
    @Test func aFullURLSetsEveryPart() throws {
        let configuration = try RESPConfiguration(url: "redis://gateway:s%40cr%3At@cache.internal:6380/3")
        #expect(configuration.host == "cache.internal")
        #expect(configuration.port == 6380)
        #expect(configuration.username == "gateway")
        #expect(configuration.password == "s@cr:t")
        #expect(configuration.database == 3)
        #expect(configuration.tls == nil)
    }

    @Test func defaultsAreTheUsualPortAndDatabaseZero() throws {
        let configuration = try RESPConfiguration(url: "redis://localhost")
        #expect(configuration.port == 6379)
        #expect(configuration.database == 0)
        #expect(configuration.username == nil)
        #expect(configuration.password == nil)
        #expect(configuration.protocolVersion == .resp2)
    }

    @Test func aPasswordWithoutUserIsTheDefaultUsers() throws {
        let configuration = try RESPConfiguration(url: "redis://:secret@localhost:6379/")
        #expect(configuration.username == nil)
        #expect(configuration.password == "secret")
    }

    @Test func theLastAtEndsTheCredentials() throws {
        let configuration = try RESPConfiguration(url: "redis://u:p@ss@host")
        #expect(configuration.password == "p@ss")
        #expect(configuration.host == "host")
    }

    @Test func redissTurnsOnTLSWithSystemRoots() throws {
        let configuration = try RESPConfiguration(url: "rediss://redis.example.com:6390")
        #expect(configuration.tls == RESPConfiguration.TLS(trustRoots: .system, serverName: nil))
        #expect(configuration.port == 6390)
    }

    @Test func anIPv6HostGoesInBrackets() throws {
        let configuration = try RESPConfiguration(url: "redis://[::1]:7000/1")
        #expect(configuration.host == "::1")
        #expect(configuration.port == 7000)
        #expect(configuration.database == 1)
    }

    @Test(arguments: [
        ("http://localhost", RESPURLError.unsupportedScheme("http")),
        ("localhost:6379", .unsupportedScheme("localhost:6379")),
        ("redis://", .missingHost),
        ("redis://:6379", .missingHost),
        ("redis://user:pw@/0", .missingHost),
        ("redis://[::1", .missingHost),
        ("redis://host:0", .invalidPort("0")),
        ("redis://host:65536", .invalidPort("65536")),
        ("redis://host:+80", .invalidPort("+80")),
        ("redis://host:port", .invalidPort("port")),
        ("redis://[::1]x", .invalidPort("x")),
        ("redis://host/db", .invalidDatabase("/db")),
        ("redis://host/-1", .invalidDatabase("/-1")),
        ("redis://host//1", .invalidDatabase("//1")),
        ("redis://host/1/2", .invalidDatabase("/1/2")),
        ("redis://u:%zz@host", .invalidPercentEncoding),
        ("redis://u:%2@host", .invalidPercentEncoding),
        ("redis://host?db=1", .unsupportedComponent("?")),
        ("redis://host#x", .unsupportedComponent("#")),
    ])
    func malformedURLsAreRejectedWithTheReason(url: String, expected: RESPURLError) {
        #expect(throws: expected) { try RESPConfiguration(url: url) }
    }

    @Test func theDescriptionNeverShowsThePassword() throws {
        var configuration = try RESPConfiguration(url: "rediss://alice:hunter2@cache:6380/2")
        #expect(configuration.description == "rediss://alice:<redacted>@cache:6380/2")
        configuration.password = "from-the-environment"
        #expect(!configuration.description.contains("from-the-environment"))
    }
}
