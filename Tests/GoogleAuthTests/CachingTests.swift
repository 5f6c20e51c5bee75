import GoogleAuth
import Testing
import TokenGateTesting

/// One fetch however many callers wait; refreshed ahead of expiry; the old token when a refresh fails.
@Suite struct CachingTests {
    /// 100 concurrent calls for a token.
    private func hundredConcurrent(_ credentials: any GoogleCredentials) async throws -> Set<String> {
        try await withThrowingTaskGroup(of: String.self) { group in
            for _ in 0..<100 { group.addTask { try await credentials.accessToken().value } }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
    }

    private func keyAccountCredentials(_ standIn: GoogleStandIn, refreshes: RefreshCounter) async throws -> any GoogleCredentials {
        let keyFile = try await standIn.exportKeyFile(Fixture.keyAccount)
        return try resolve(file: keyFile, refreshes: refreshes)
    }

    @Test func hundredConcurrentCallersMakeOneFetch() async throws {
        try await GoogleStandIn.with { standIn in
            let refreshes = RefreshCounter()
            let credentials = try await keyAccountCredentials(standIn, refreshes: refreshes)
            let values = try await hundredConcurrent(credentials)
            #expect(values.count == 1)
            #expect(try await standIn.calls(kind: "token") == 1)
            #expect(refreshes.succeeded == 1 && refreshes.failed == 0)
            // Cached afterwards: no further fetch.
            #expect(try await credentials.accessToken().value == values.first)
            #expect(try await standIn.calls(kind: "token") == 1)
        }
    }

    /// A 227 s token is due 2 s after issue (less than 225 s left): 100 callers then share one refresh.
    @Test func tokenNearExpiryIsRefreshedOnceForHundredCallers() async throws {
        try await GoogleStandIn.with { standIn in
            let refreshes = RefreshCounter()
            try await standIn.control(#"{"tokenLifetimeSec": 227}"#)
            let credentials = try await keyAccountCredentials(standIn, refreshes: refreshes)
            let first = try await credentials.accessToken()
            #expect(try await hundredConcurrent(credentials) == [first.value])
            #expect(try await standIn.calls(kind: "token") == 1)
            try await Task.sleep(for: .seconds(3))
            let refreshed = try await hundredConcurrent(credentials)
            #expect(refreshed.count == 1 && !refreshed.contains(first.value))
            #expect(try await standIn.calls(kind: "token") == 2)
            #expect(refreshes.succeeded == 2)
        }
    }

    /// Shorter than the 225 s threshold from the start: used until 10 s before expiry, not refetched per call.
    @Test func shortLivedTokenIsNotRefetchedOnEveryCall() async throws {
        try await GoogleStandIn.with { standIn in
            try await standIn.control(#"{"tokenLifetimeSec": 200}"#)
            let credentials = try await keyAccountCredentials(standIn, refreshes: RefreshCounter())
            let first = try await credentials.accessToken()
            #expect(try await credentials.accessToken().value == first.value)
            #expect(try await standIn.calls(kind: "token") == 1)
        }
    }

    @Test func failedRefreshWhileOldTokenIsValidReturnsTheOldOne() async throws {
        try await GoogleStandIn.with { standIn in
            let refreshes = RefreshCounter()
            try await standIn.control(#"{"tokenLifetimeSec": 227}"#)
            let credentials = try await keyAccountCredentials(standIn, refreshes: refreshes)
            let first = try await credentials.accessToken()
            try await standIn.control(#"{"faults": {"token": {"status": 400, "count": 1}}}"#)
            try await Task.sleep(for: .seconds(3))
            #expect(try await credentials.accessToken().value == first.value)
            #expect(refreshes.failed == 1)
            #expect(try await standIn.calls(kind: "token") == 2)
            // The next attempt, a second later, succeeds.
            try await Task.sleep(for: .milliseconds(1100))
            #expect(try await credentials.accessToken().value != first.value)
            #expect(refreshes.succeeded == 2)
        }
    }

    /// No token to fall back on: the failure reaches every waiting caller.
    @Test func failedFirstFetchThrowsToEveryCaller() async throws {
        try await GoogleStandIn.with { standIn in
            let refreshes = RefreshCounter()
            let credentials = try await keyAccountCredentials(standIn, refreshes: refreshes)
            try await standIn.control(#"{"faults": {"token": {"status": 400, "count": 1}}}"#)
            let failures = await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<20 { group.addTask { (try? await credentials.accessToken()) == nil } }
                return await group.reduce(0) { $0 + ($1 ? 1 : 0) }
            }
            #expect(failures == 20)
            #expect(try await standIn.calls(kind: "token") == 1)
            #expect(refreshes.failed == 1)
        }
    }
}
