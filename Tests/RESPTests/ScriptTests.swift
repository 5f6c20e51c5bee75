import NIOCore
import RESP
import RESPTesting
import Testing

/// EVALSHA with the NOSCRIPT fallback, observed through the server's command statistics.
@Suite struct ScriptTests {
    static let compareAndDelete = """
        if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) else return 0 end
        """

    @Test func theSHA1IsTheOneTheServerComputes() async throws {
        let script = try RESPScript(Self.compareAndDelete)
        try await RedisServer.with { server async throws in
            try await server.withClient { client async throws in
                #expect(try await client.send(["SCRIPT", "LOAD", script.source]).string == script.sha1)
            }
        }
    }

    /// The first call after `SCRIPT FLUSH` runs through the fallback (one failed EVALSHA, one EVAL); the second is
    /// a plain EVALSHA, because EVAL cached the script.
    @Test func aFlushedScriptRunsThroughTheFallbackThenFromTheCache() async throws {
        let script = try RESPScript(Self.compareAndDelete)
        try await RedisServer.with { server async throws in
            try await server.withClient { client async throws in
                try await client.send(["SCRIPT", "FLUSH"])
                try await client.send(["CONFIG", "RESETSTAT"])
                try await client.set("lock", to: "me")
                #expect(try await client.evalSHA(script: script, keys: ["lock"], args: ["someone-else"]) == .integer(0))
                #expect(try await Self.calls(of: "eval", on: client) == 1)
                #expect(try await client.send(["SCRIPT", "EXISTS", script.sha1]) == .array([.integer(1)]))
                #expect(try await client.evalSHA(script: script, keys: ["lock"], args: ["me"]) == .integer(1))
                #expect(try await Self.calls(of: "eval", on: client) == 1)
                #expect(try await Self.calls(of: "evalsha", on: client) == 2)
                #expect(try await client.get("lock") == nil)
            }
        }
    }

    @Test func aScriptErrorIsAServerErrorNotARetry() async throws {
        let script = try RESPScript("return redis.error_reply('LOCKED held elsewhere')")
        try await RedisServer.with { server async throws in
            try await server.withClient { client async throws in
                await #expect(throws: RESPError.server("LOCKED held elsewhere")) {
                    try await client.evalSHA(script: script)
                }
            }
        }
    }

    /// `calls=` of `cmdstat_<name>` in `INFO commandstats`: 0 when the command never ran.
    static func calls(of command: String, on client: RESPClient) async throws -> Int {
        let info = try await client.send(["INFO", "commandstats"]).string ?? ""
        guard let line = info.split(whereSeparator: \.isNewline).first(where: { $0.hasPrefix("cmdstat_\(command):") }),
            let field = line.split(separator: ":")[1].split(separator: ",").first(where: { $0.hasPrefix("calls=") })
        else { return 0 }
        return Int(field.dropFirst("calls=".count)) ?? -1
    }
}
