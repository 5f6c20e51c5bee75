package import AsyncHTTPClient
import Foundation
import GoogleAuth
package import TokenGateCore

/// Builds `google-iam` backends (see ``GoogleIAMSettings`` for the section). The credentials are found here, at
/// load time, in Google's Application Default Credentials order, so a missing or malformed credentials file is a
/// located configuration error; the first access token is fetched once the generation runs.
package struct GoogleIAMSignerFactory: TokenBackendFactory {
    package let type = "google-iam"
    let httpClient: HTTPClient
    let environment: [String: String]

    /// A factory whose backends call Google (or the configured stand-ins) through `httpClient`, and read ADC's
    /// environment variables (`GOOGLE_APPLICATION_CREDENTIALS`, `CLOUDSDK_CONFIG`, `HOME`, `GCE_METADATA_HOST`)
    /// from `environment`.
    package init(httpClient: HTTPClient, environment: [String: String] = ProcessInfo.processInfo.environment) {
        self.httpClient = httpClient
        self.environment = environment
    }

    package func makeBackend(_ context: BackendContext) async throws -> any TokenBackend {
        let settings = try GoogleIAMSettings.parse(context.section)
        let metrics = context.metrics
        let credentials: any GoogleCredentials
        do {
            credentials = try ApplicationDefaultCredentials.resolve(
                credentialsFile: settings.credentialsFile,
                environment: environment,
                endpoints: GoogleEndpoints(oauthToken: settings.oauthToken),
                client: httpClient,
                logger: context.logger,
                onRefresh: { metrics.recordAccessTokenRefresh(succeeded: $0) })
        } catch {
            let section = try context.section.mapping(allowedKeys: GoogleIAMSettings.keys)
            throw (section.optional("credentialsFile") ?? context.section).error("Application Default Credentials: \(error)")
        }
        let iam = IAMCredentialsClient(
            client: httpClient, baseURL: settings.iamCredentials, credentials: credentials, delegates: settings.delegates,
            quotaProject: settings.quotaProject ?? credentials.quotaProject)
        return GoogleIAMSigner(
            settings: settings, iam: iam, health: SignerHealth(credentialsSummary: credentials.summary, accounts: settings.accounts),
            audience: context.audience,
            clock: context.clock, metrics: metrics, logger: context.logger)
    }
}
