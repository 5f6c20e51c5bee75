import Foundation
import GoogleAuth
import JOSE
import Testing
import TokenGateTesting

/// A file's `quota_project_id` and `workforce_pool_user_project`, sent where and as google-auth sends them (the
/// stand-in logs `x-goog-user-project` as `userProject` and STS's decoded `options`).
@Suite struct UserProjectTests {
    /// Not to STS; on generateAccessToken (a call made with the federated token); exposed for the API calls.
    @Test func aQuotaProjectGoesOnImpersonationAndTheAPICallsButNotToSTS() async throws {
        try await GoogleStandIn.with { standIn in
            let (audience, principal) = Federation.pool(501, "quota")
            try await standIn.provider(audience, subjects: ["q-token": "q"])
            try await standIn.register(Fixture.target)
            try await standIn.grant(principal + "q", [Fixture.target])
            try await TemporaryDirectory.with { directory in
                let subject = try directory.write("token", "q-token")
                var object = Federation.external(
                    standIn, audience: audience, type: Fixture.jwtType, source: ["file": .string(subject)], impersonating: Fixture.target)
                object["quota_project_id"] = "billing-project"
                let credentials = try resolve(file: try writeJSON(directory, "external.json", object))
                #expect(credentials.quotaProject == "billing-project")
                _ = try await credentials.accessToken()
                #expect(try await standIn.log("sts").map { $0["userProject"] } == [.null])
                #expect(try await standIn.log("generateAccessToken").map { $0["userProject"] } == ["billing-project"])
            }
        }
    }

    /// impersonated_service_account: generateAccessToken is the source credentials' call, so it carries their
    /// quota project; the file's own is for the impersonated token's calls.
    @Test func anImpersonatedFileBillsItsSourcesProjectForImpersonation() async throws {
        try await GoogleStandIn.with { standIn in
            let keyFile = try await standIn.exportKeyFile(Fixture.keyAccount)
            try await standIn.register(Fixture.impersonated)
            try await standIn.grant(Fixture.keyAccount, [Fixture.impersonated])
            try await TemporaryDirectory.with { directory in
                var source = try readObject(keyFile)
                source["quota_project_id"] = "source-billing"
                let file = try writeJSON(
                    directory, "impersonated.json",
                    [
                        "type": "impersonated_service_account", "quota_project_id": "top-billing",
                        "service_account_impersonation_url": .string(standIn.impersonationURL(Fixture.impersonated)),
                        "source_credentials": .object(source),
                    ])
                let credentials = try resolve(file: file)
                #expect(credentials.quotaProject == "top-billing")
                _ = try await credentials.accessToken()
                #expect(try await standIn.log("token").map { $0["userProject"] } == [.null])
                #expect(try await standIn.log("generateAccessToken").map { $0["userProject"] } == ["source-billing"])
                // A key file of its own names its project for the API calls too.
                #expect(try resolve(file: try writeJSON(directory, "key.json", source)).quotaProject == "source-billing")
            }
        }
    }

    @Test func aWorkforcePoolUserProjectGoesInSTSOptionsUnlessAClientIDIsSent() async throws {
        try await GoogleStandIn.with { standIn in
            let workforce = "//iam.googleapis.com/locations/global/workforcePools/staff/providers/oidc"
            try await standIn.provider(workforce, subjects: ["staff-token": "alice@example.com"])
            try await TemporaryDirectory.with { directory in
                let subject = try directory.write("token", "staff-token")
                var object = Federation.external(standIn, audience: workforce, type: Federation.idTokenType, source: ["file": .string(subject)])
                object["workforce_pool_user_project"] = "123456789012"
                _ = try await resolve(file: try writeJSON(directory, "staff.json", object)).accessToken()
                let sts = try #require(try await standIn.log("sts").last)
                #expect(sts["options"] == .object(["userProject": "123456789012"]))
                #expect(
                    sts["principal"]?.stringValue == "principal://iam.googleapis.com/locations/global/workforcePools/staff/subject/alice@example.com")

                object["client_id"] = "workforce-client"
                object["client_secret"] = "workforce-client-secret"
                _ = try await resolve(file: try writeJSON(directory, "client.json", object)).accessToken()
                #expect(try await standIn.log("sts").last?["options"] == .null)
            }
        }
    }

    /// The bytes google-auth sends: `quote(json.dumps({"userProject": …}))`, as Python printed it.
    @Test func stsOptionsArePercentEncodedJSONAsGoogleAuthWritesThem() {
        #expect(LibraryEncoding.stsOptions(userProject: "123456789012") == "%7B%22userProject%22%3A%20%22123456789012%22%7D")
    }

    @Test func aWorkforceUserProjectForAWorkloadPoolIsAConfigurationError() async throws {
        try await TemporaryDirectory.with { directory in
            let path = try writeJSON(directory, "external.json", ConfigurationTests.external.with("workforce_pool_user_project", "123"))
            let error = configurationError(path)
            #expect(error?.message.contains("\"workforce_pool_user_project\" is set for a workload identity pool") == true, "\(error?.message ?? "")")
        }
    }
}
