import Foundation
import GoogleAuth
import JOSE
import Testing
import TokenGateTesting

/// Executable-sourced credentials, run as google-auth's pluggable credentials run them (Tests/Peers/google checks
/// executable_source.py and the stand-in against google-auth).
@Suite struct ExecutableSourceTests {
    /// The runs `--record` wrote: one JSON object per run.
    static func runs(_ record: String) -> [JSONObject] {
        guard let text = try? String(contentsOfFile: record, encoding: .utf8) else { return [] }
        return text.split(separator: "\n").compactMap { try? JSON.parse(Array($0.utf8)).objectValue }
    }

    @Test func runsTheExecutableWithGooglesVariablesThenUsesItsOutputFileWhileItLasts() async throws {
        try await GoogleStandIn.with { standIn in
            let (audience, principal) = Federation.pool(301, "exec")
            try await standIn.provider(audience, subjects: ["oidc-from-exe": "build-42"])
            try await standIn.register(Fixture.impersonated)
            try await standIn.register(Fixture.target)
            try await standIn.grant(principal + "build-42", [Fixture.impersonated])
            try await standIn.grant(Fixture.impersonated, [Fixture.target])
            try await TemporaryDirectory.with { directory in
                let record = "\(directory.path)/runs.jsonl"
                let cache = "\(directory.path)/cache.json"
                let file = try writeJSON(
                    directory, "exec.json",
                    Federation.executable(
                        standIn, audience: audience, arguments: "--token oidc-from-exe --record \(record) --write-output-file",
                        outputFile: cache, impersonating: Fixture.impersonated))
                let credentials = try resolve(file: file, environment: Federation.executableEnvironment())
                #expect(credentials.summary.contains("the executable \(GoogleStandIn.executableSourcePath) (output file \(cache))"))
                let token = try await credentials.accessToken()
                #expect(try await standIn.signJwtStatus(for: Fixture.target, with: token) == 200)
                #expect(token.provenance?.contains("a subject token from a run of the executable") == true, "\(token.provenance ?? "")")
                let runs = Self.runs(record)
                #expect(runs.count == 1)
                // Google's documented set, the impersonated email included (google-auth leaves it out: see the source).
                #expect(
                    runs.first?["env"]?.objectValue
                        == [
                            "GOOGLE_EXTERNAL_ACCOUNT_AUDIENCE": .string(audience),
                            "GOOGLE_EXTERNAL_ACCOUNT_TOKEN_TYPE": .string(Federation.idTokenType),
                            "GOOGLE_EXTERNAL_ACCOUNT_ID": .string(Fixture.impersonated),
                            "GOOGLE_EXTERNAL_ACCOUNT_IMPERSONATED_EMAIL": .string(Fixture.impersonated),
                            "GOOGLE_EXTERNAL_ACCOUNT_INTERACTIVE": "0", "GOOGLE_EXTERNAL_ACCOUNT_OUTPUT_FILE": .string(cache),
                            "GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES": "1", "GOOGLE_EXTERNAL_ACCOUNT_REVOKE": "0",
                        ])

                // New credentials find the unexpired response in the output file: no run.
                let cached = try await resolve(file: file, environment: Federation.executableEnvironment()).accessToken()
                #expect(cached.provenance?.contains("cached until") == true)
                #expect(Self.runs(record).count == 1)
                // Expired, or without an expiration_time: run again.
                var response = try readObject(cache)
                for expiry in [JSONValue.integer(Int64(Date().timeIntervalSince1970) - 1), nil] {
                    response["expiration_time"] = expiry
                    try writeJSON(directory, "cache.json", response)
                    _ = try await resolve(file: file, environment: Federation.executableEnvironment()).accessToken()
                }
                #expect(Self.runs(record).count == 3)
                #expect(try await standIn.calls(kind: "sts") == 4)
            }
        }
    }

    /// Without an output file, every fetch runs it; a response on standard output may leave out its expiry, and
    /// the command is split as a POSIX shell would (quotes kept together), with no shell.
    @Test func withoutAnOutputFileEachFetchRunsIt() async throws {
        try await GoogleStandIn.with { standIn in
            let (audience, principal) = Federation.pool(302, "exec")
            try await standIn.provider(audience, subjects: ["token with spaces": "quoted"])
            try await standIn.register(Fixture.target)
            try await standIn.grant(principal + "quoted", [Fixture.target])
            try await TemporaryDirectory.with { directory in
                let record = "\(directory.path)/runs.jsonl"
                let file = try writeJSON(
                    directory, "exec.json",
                    Federation.executable(standIn, audience: audience, arguments: "--token 'token with spaces' --no-expiry --record \"\(record)\""))
                for _ in 0..<2 {
                    let token = try await resolve(file: file, environment: Federation.executableEnvironment()).accessToken()
                    #expect(try await standIn.signJwtStatus(for: Fixture.target, with: token) == 200)
                }
                #expect(Self.runs(record).count == 2)
                #expect(Self.runs(record).first?["env"]?.objectValue?["GOOGLE_EXTERNAL_ACCOUNT_OUTPUT_FILE"] == nil)
            }
        }
    }

    @Test(
        arguments: [
            ("--mode fail", GoogleAuthError.Kind.credentialSourceFailed, "reports a failure: code 401, message Caller not authorized."),
            ("--mode garbage", .malformedAnswer, "something other than a JSON object"),
            ("--mode exit", .credentialSourceFailed, "exited with status 1"),
            ("--mode version2", .malformedAnswer, "version 2"),
            ("--token ok-token --expires-in -10", .credentialSourceFailed, "expired"),
            ("--mode no-token-type", .malformedAnswer, "\"token_type\""),
            ("--mode empty", .malformedAnswer, "printed nothing"),
        ] as [(String, GoogleAuthError.Kind, String)])
    func aFailingExecutableIsAnErrorOfItsOwnAndSTSIsNeverAsked(arguments: String, kind: GoogleAuthError.Kind, message: String) async throws {
        try await GoogleStandIn.with { standIn in
            let (audience, _) = Federation.pool(303, "exec")
            try await standIn.provider(audience, subjects: ["ok-token": "ok"])
            try await TemporaryDirectory.with { directory in
                let file = try writeJSON(directory, "exec.json", Federation.executable(standIn, audience: audience, arguments: arguments))
                let error = await tokenError(try resolve(file: file, environment: Federation.executableEnvironment()))
                #expect(error?.kind == kind, "\(arguments): \(error?.message ?? "")")
                #expect(error?.message.contains(message) == true, "\(arguments): \(error?.message ?? "")")
                // What it printed is never quoted: it may hold a credential.
                #expect(error?.message.contains("could not reach the identity provider") == false)
                #expect(try await standIn.calls(kind: "sts") == 0)
            }
        }
    }

    @Test func anExecutableThatOutlivesItsTimeoutIsKilledThen() async throws {
        try await GoogleStandIn.with { standIn in
            let (audience, _) = Federation.pool(304, "exec")
            try await standIn.provider(audience, subjects: ["ok-token": "ok"])
            try await TemporaryDirectory.with { directory in
                let file = try writeJSON(
                    directory, "exec.json",
                    Federation.executable(standIn, audience: audience, arguments: "--mode sleep --sleep 30", timeoutMillis: 5000))
                let started = ContinuousClock.now
                let error = await tokenError(try resolve(file: file, environment: Federation.executableEnvironment()))
                let took = ContinuousClock.now - started
                #expect(error?.kind == .timeout, "\(error?.message ?? "")")
                #expect(error?.message.contains("did not finish within 5000 ms") == true, "\(error?.message ?? "")")
                // Its own timeout, not the 10 s of the HTTP calls, and not the 30 s it would have slept.
                #expect(took >= .seconds(5) && took < TestTiming.bound(.seconds(12)), "\(took)")
            }
        }
    }

    /// The whole process group goes at the timeout: a script's background child too, which would otherwise leave
    /// its mark a second later.
    @Test func aTimedOutExecutablesChildrenAreKilledWithIt() async throws {
        try await GoogleStandIn.with { standIn in
            try await TemporaryDirectory.with { directory in
                let marker = "\(directory.path)/grandchild-survived"
                let script = try directory.write("slow.sh", "#!/bin/sh\n( sleep 6; touch \"$1\" ) &\nsleep 30\n")
                try FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: script)
                var object = Federation.executable(standIn, audience: Fixture.audience, arguments: "")
                object["credential_source"] = .object(["executable": .object(["command": .string("\(script) \(marker)"), "timeout_millis": 5000])])
                let file = try writeJSON(directory, "exec.json", object)
                let started = ContinuousClock.now
                let error = await tokenError(try resolve(file: file, environment: Federation.executableEnvironment()))
                #expect(error?.kind == .timeout, "\(error?.message ?? "")")
                try await Task.sleep(until: started + .seconds(8), clock: .continuous)
                #expect(!FileManager.default.fileExists(atPath: marker))
            }
        }
    }

    /// Without GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES=1 exactly, nothing runs: resolving fails.
    @Test(arguments: [nil, "true", "0"] as [String?])
    func anExecutableNotAllowedByTheOperatorNeverRuns(allowed: String?) async throws {
        try await GoogleStandIn.with { standIn in
            try await TemporaryDirectory.with { directory in
                let record = "\(directory.path)/runs.jsonl"
                let path = try writeJSON(
                    directory, "exec.json", Federation.executable(standIn, audience: Fixture.audience, arguments: "--record \(record)"))
                let error = configurationError(path, environment: Federation.executableEnvironment(allowed: allowed))
                let message = error?.message ?? ""
                #expect(message.contains(path) && message.contains("GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES=1"), "\(message)")
                #expect(!FileManager.default.fileExists(atPath: record))
            }
        }
    }

    /// A malformed response in the output file is an error (google-auth's MalformedError), not a reason to run.
    @Test func aMalformedOutputFileIsAnErrorAndNothingRuns() async throws {
        try await GoogleStandIn.with { standIn in
            try await TemporaryDirectory.with { directory in
                let record = "\(directory.path)/runs.jsonl"
                let cache = try directory.write("cache.json", #"{"success": true, "token_type": "urn:ietf:params:oauth:token-type:jwt"}"#)
                let file = try writeJSON(
                    directory, "exec.json",
                    Federation.executable(standIn, audience: Fixture.audience, arguments: "--record \(record)", outputFile: cache))
                let error = await tokenError(try resolve(file: file, environment: Federation.executableEnvironment()))
                #expect(error?.kind == .malformedAnswer)
                #expect(error?.message.contains("\(cache) holds a response that has no \"version\"") == true, "\(error?.message ?? "")")
                #expect(Self.runs(record).isEmpty)
            }
        }
    }

    @Test(
        arguments: [
            ("short timeout", JSONValue.object(["command": "/bin/true", "timeout_millis": 4999]), "\"credential_source.executable.timeout_millis\""),
            ("long timeout", .object(["command": "/bin/true", "timeout_millis": 120_001]), "\"credential_source.executable.timeout_millis\""),
            ("relative", .object(["command": "get-token --now"]), "absolute path"),
            ("unclosed quote", .object(["command": "/bin/echo 'token"]), "unclosed quote"),
            ("no command", .object(["timeout_millis": 5000]), "\"credential_source.executable.command\""),
        ] as [(String, JSONValue, String)])
    func aMalformedExecutableSourceIsALocatedConfigurationError(_ case: String, executable: JSONValue, expected: String) async throws {
        try await TemporaryDirectory.with { directory in
            let path = try writeJSON(
                directory, "exec.json", ConfigurationTests.external.with("credential_source", .object(["executable": executable])))
            let message = configurationError(path, environment: Federation.executableEnvironment())?.message ?? ""
            #expect(message.contains(path) && message.contains(expected), "\(`case`): \(message)")
        }
    }
}
