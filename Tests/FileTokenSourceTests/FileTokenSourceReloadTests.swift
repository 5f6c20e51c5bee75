import FileTokenSource
import Foundation
import Logging
import Testing
import TokenGateCore
import TokenGateTesting

@Suite struct FileTokenSourceReloadTests {
    static let trip42 = TokenContext.trip(.id("trip-42"))
    static let trip43 = TokenContext.trip(.id("trip-43"))

    /// A source loaded with a token for trip-42.
    static func loaded() async throws -> (Fixture, FileTokenSource, String) {
        let fixture = try Fixture()
        let token = try Fixture.token(trip42)
        try fixture.write("consumer:\n  trip-42: \(token)\n")
        return (fixture, try await fixture.makeSource(), token)
    }

    @Test func reloadsWhenTheFileChanges() async throws {
        let (fixture, source, _) = try await Self.loaded()
        let newToken = try Fixture.token(Self.trip43)
        try fixture.write("consumer:\n  trip-43: \(newToken)\n")
        #expect(source.reloadIfChanged() == .reloaded(loaded: 1, skipped: []))
        #expect(try await source.issue(.with(Self.trip43)).compact == newToken)
        await #expect(throws: TokenGateError(.noTokenForContext, "")) { try await source.issue(.with(Self.trip42)) }
        #expect(fixture.logs.all.contains { $0.level == .info && $0.message == "reloaded pre-issued tokens" })
    }

    @Test func seesARewriteOfTheSameSizeWithinTheSameSecond() async throws {
        let (fixture, source, _) = try await Self.loaded()
        let path = "\(fixture.directory)/tokens.yaml"
        let before = try FileManager.default.attributesOfItem(atPath: path)
        let newToken = try Fixture.token(Self.trip43)
        try fixture.write("consumer:\n  trip-43: \(newToken)\n")
        // Same size, same modification time: only the content hash tells the versions apart.
        try FileManager.default.setAttributes([.modificationDate: before[.modificationDate]!], ofItemAtPath: path)
        #expect((try FileManager.default.attributesOfItem(atPath: path))[.size] as? Int == before[.size] as? Int)
        #expect(source.reloadIfChanged() == .reloaded(loaded: 1, skipped: []))
        #expect(try await source.issue(.with(Self.trip43)).compact == newToken)
    }

    @Test func anUnchangedFileIsLeftAlone() async throws {
        let (fixture, source, token) = try await Self.loaded()
        #expect(source.reloadIfChanged() == .unchanged)
        try fixture.write("consumer:\n  trip-42: \(token)\n")  // rewritten, same bytes
        #expect(source.reloadIfChanged() == .unchanged)
        #expect(!fixture.logs.all.contains { $0.message == "reloaded pre-issued tokens" })
    }

    @Test(arguments: [
        "",
        "consumer:\n",
        "consumer:\n  trip-42: \"eyJhbGciOiJSUzI1",
        "consumer: {trip-42: eyJhbG",
        "consumer:\n  trip-42:\n    - half",
        "taxi:\n  t-1: x\n",
    ])
    func aBrokenRewriteKeepsTheOldTokensAndSaysWhy(_ broken: String) async throws {
        let (fixture, source, token) = try await Self.loaded()
        try fixture.write(broken)
        let outcome = source.reloadIfChanged()
        guard case .failed(let reason) = outcome else {
            Issue.record("expected a failure, got \(outcome)")
            return
        }
        #expect(reason.contains("\(fixture.directory)/tokens.yaml"), "\(reason)")
        #expect(try await source.issue(.with(Self.trip42)).compact == token)
        #expect(source.reloadIfChanged() == .failed(reason: reason))
        let errors = fixture.logs.all.filter { $0.level == .error }
        #expect(errors.count == 1, "a file that stays broken is reported once")
        #expect(errors.first?.metadata["reason"] == reason)

        let fixed = try Fixture.token(Self.trip43)
        try fixture.write("consumer:\n  trip-42: \(token)\n  trip-43: \(fixed)\n")
        #expect(source.reloadIfChanged() == .reloaded(loaded: 2, skipped: []))
    }

    @Test func aDeletedFileKeepsTheOldTokens() async throws {
        let (fixture, source, token) = try await Self.loaded()
        try FileManager.default.removeItem(atPath: "\(fixture.directory)/tokens.yaml")
        #expect(source.reloadIfChanged() == .failed(reason: "no such file: \(fixture.directory)/tokens.yaml"))
        #expect(try await source.issue(.with(Self.trip42)).compact == token)
    }

    @Test func reportsTokensSkippedOnReload() async throws {
        let (fixture, source, token) = try await Self.loaded()
        let wrong = try Fixture.token(Self.trip43, claimed: .trip(.id("trip-44")))
        try fixture.write("consumer:\n  trip-42: \(token)\n  trip-43: \(wrong)\n")
        guard case .reloaded(let loaded, let skipped) = source.reloadIfChanged() else {
            Issue.record("expected a reload")
            return
        }
        #expect(loaded == 1)
        #expect(skipped.map(\.reason.rawValue) == ["wrong_context"])
        #expect(skipped.first?.keyPath == "consumer.trip-43")
        #expect(skipped.first?.location == "\(fixture.directory)/tokens.yaml:3:12")
        #expect(!fixture.logs.all.contains { $0.text.contains(wrong) })
    }

    @Test func waitsForContentThatReadsTheSameTwiceWhenAskedTo() async throws {
        let (fixture, source, token) = try await Self.loaded()
        let newToken = try Fixture.token(Self.trip43)
        let complete = "consumer:\n  trip-42: \(token)\n  trip-43: \(newToken)\n"
        // A writer caught halfway: the first half parses, with the second token cut short.
        try fixture.write(String(complete.prefix(complete.count - 100)))
        #expect(source.reload(requiringStableContent: true) == .changing)
        try fixture.write(complete)
        #expect(source.reload(requiringStableContent: true) == .changing)
        #expect(source.reload(requiringStableContent: true) == .reloaded(loaded: 2, skipped: []))
        #expect(source.reload(requiringStableContent: true) == .unchanged)
    }

    @Test(.timeLimit(.minutes(5)))
    func theServiceReloadsInTheBackgroundUntilCancelled() async throws {
        let (fixture, source, _) = try await Self.loaded()
        let newToken = try Fixture.token(Self.trip43)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await source.run() }
            try fixture.write("consumer:\n  trip-43: \(newToken)\n", atomically: true)
            // The service logs each reload; wait for that entry rather than for time to pass.
            for await entry in fixture.logs.stream where entry.message == "reloaded pre-issued tokens" { break }
            #expect(try await source.issue(.with(Self.trip43)).compact == newToken)
            group.cancelAll()
            try await group.waitForAll()  // run() returns normally once cancelled
        }
    }
}
