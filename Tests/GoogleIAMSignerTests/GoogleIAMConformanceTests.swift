import AsyncHTTPClient
import Foundation
import GoogleIAMSigner
import Testing
import TokenBackendConformance
import TokenGateCore
import TokenGateHTTP
import TokenGateOutbound
import TokenGateTesting

@Suite struct GoogleIAMConformanceTests {
    /// The IAM signer meets the backend contract against the Google stand-in, signing with the runtime account's
    /// credentials as the two Fleet Engine accounts; its keys are the ones the stand-in publishes for each account,
    /// and an account it may not sign as makes it fail with a `backend_*` code.
    @Test func theIAMSignerMeetsTheContract() async throws {
        try await IAMFixture.run { fixture in
            let keyFile = try await fixture.runtimeKeyFile()
            func section(consumer: String) -> String {
                """
                type: google-iam
                serviceAccounts: { consumer: \(consumer), driver: \(IAMFixture.driver) }
                credentialsFile: \(keyFile)
                endpoints:
                  iamCredentials: \(fixture.standIn.baseURL)
                  publicKeys: \(fixture.standIn.baseURL)/service_accounts/v1/jwk/{serviceAccount}
                  oauthToken: \(fixture.standIn.baseURL)/token
                """
            }
            let good = section(consumer: IAMFixture.consumer)
            let conformance = BackendConformance(
                factory: GoogleIAMSignerFactory(httpClient: HTTPClient.shared, environment: try fixture.environment()), section: good,
                directory: fixture.directory.path, jwksFetcher: HTTPJWKSFetcher(client: HTTPClient.shared),
                failingSection: section(consumer: IAMFixture.metadataAccount),
                invalidSection: (yaml: good.replacingOccurrences(of: "{ consumer:", with: "{ taxi:"), key: "serviceAccounts.taxi"),
                endWithin: TestTiming.bound(.seconds(5)))
            let violations = await conformance.violations()
            #expect(violations.isEmpty, "\(violations)")
        }
    }
}
