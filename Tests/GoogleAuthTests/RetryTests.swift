import GoogleAuth
import JOSE
import Testing
import TokenGateTesting

/// 429/5xx and connection failures are retried (3 attempts); other 4xx are final and name Google's error.
@Suite struct RetryTests {
    @Test func twoServiceUnavailableAnswersThenSuccess() async throws {
        try await GoogleStandIn.with { standIn in
            let keyFile = try await standIn.exportKeyFile(Fixture.keyAccount)
            try await standIn.control(#"{"faults": {"token": {"status": 503, "count": 2, "retryAfter": 0}}}"#)
            let refreshes = RefreshCounter()
            _ = try await resolve(file: keyFile, refreshes: refreshes).accessToken()
            #expect(try await standIn.calls(kind: "token") == 3)
            #expect(refreshes.succeeded == 1 && refreshes.failed == 0)
        }
    }

    @Test func threeServiceUnavailableAnswersFail() async throws {
        try await GoogleStandIn.with { standIn in
            let keyFile = try await standIn.exportKeyFile(Fixture.keyAccount)
            try await standIn.control(#"{"faults": {"token": {"status": 503, "count": 5, "retryAfter": 0}}}"#)
            let error = await tokenError(try resolve(file: keyFile))
            #expect(error?.kind == .refused(status: 503))
            #expect(error?.message.contains("temporarily_unavailable") == true)
            #expect(try await standIn.calls(kind: "token") == 3)
        }
    }

    @Test(arguments: [(400, "invalid_request"), (403, "access_denied")])
    func oauthRefusalIsFinalAndNamesGoogleError(status: Int, error code: String) async throws {
        try await GoogleStandIn.with { standIn in
            let keyFile = try await standIn.exportKeyFile(Fixture.keyAccount)
            try await standIn.control(#"{"faults": {"token": {"status": \#(status), "count": 3}}}"#)
            let error = await tokenError(try resolve(file: keyFile))
            #expect(error?.kind == .refused(status: status))
            #expect(error?.message.contains(code) == true)
            #expect(try await standIn.calls(kind: "token") == 1)
        }
    }

    /// IAM's 403 (`{"error":{"message":…}}`): impersonation without a Token Creator grant.
    @Test func impersonationDeniedIsFinalAndQuotesIAM() async throws {
        try await GoogleStandIn.with { standIn in
            let directory = try TemporaryDirectory(prefix: "imp")
            defer { directory.remove() }
            let keyFile = try await standIn.exportKeyFile(Fixture.keyAccount)
            try await standIn.register(Fixture.impersonated)
            let file = try writeJSON(
                directory, "impersonated.json",
                [
                    "type": "impersonated_service_account",
                    "service_account_impersonation_url": .string(standIn.impersonationURL(Fixture.impersonated)),
                    "source_credentials": .object(try readObject(keyFile)),
                ])
            let error = await tokenError(try resolve(file: file))
            #expect(error?.kind == .refused(status: 403))
            #expect(error?.message.contains("Permission 'iam.serviceAccounts.getAccessToken' denied") == true)
            #expect(try await standIn.calls(kind: "generateAccessToken") == 1)
        }
    }

    @Test func unreachableMetadataServerIsUnreachable() async throws {
        let port = try RedisServer.freeLoopbackPort()
        let endpoints = GoogleEndpoints(fetchTimeout: .seconds(2))
        let error = await tokenError(try resolve(environment: ["GCE_METADATA_HOST": "127.0.0.1:\(port)"], endpoints: endpoints))
        #expect(error?.kind == .unreachable)
    }

    @Test func slowAnswerEndsAtTheFetchDeadline() async throws {
        try await GoogleStandIn.with { standIn in
            let keyFile = try await standIn.exportKeyFile(Fixture.keyAccount)
            try await standIn.control(#"{"faults": {"token": {"delayMs": 8000, "count": 1}}}"#)
            let started = ContinuousClock.now
            let error = await tokenError(try resolve(file: keyFile, endpoints: GoogleEndpoints(fetchTimeout: .seconds(1))))
            #expect(error?.kind == .timeout)
            // Well short of the stand-in's 8 s: the fetch gave up at its deadline, not when the answer came.
            #expect(ContinuousClock.now - started < TestTiming.bound(.seconds(5)))
        }
    }

}
