package import AsyncHTTPClient
package import Logging

/// Google's Application Default Credentials: the credentials a Google client library would pick on this machine.
///
/// ```swift
/// let credentials = try ApplicationDefaultCredentials.resolve(
///     credentialsFile: config.credentialsFile, environment: ProcessInfo.processInfo.environment,
///     endpoints: GoogleEndpoints(), client: .shared, logger: logger) { ok in refreshes.increment(ok) }
/// ```
package enum ApplicationDefaultCredentials {
    /// Google's ADC order: `credentialsFile`, else $GOOGLE_APPLICATION_CREDENTIALS, else gcloud's
    /// application_default_credentials.json ($CLOUDSDK_CONFIG/, else $HOME/.config/gcloud/), else the metadata server.
    /// Files: service_account, authorized_user, external_account (credential_source: file or url, text or json
    /// format; AWS (environment_id aws1); an executable; an X.509 certificate; optional
    /// service_account_impersonation_url), impersonated_service_account (source_credentials of type
    /// service_account or authorized_user; delegates); each file's `quota_project_id` becomes the credentials'
    /// `quotaProject`. Anything else, or a malformed file, is a `.configuration` error naming the file and the
    /// field. `environment` is also what federation reads: AWS's variables, GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES
    /// and an executable's own environment, GOOGLE_API_CERTIFICATE_CONFIG and SSL_CERT_FILE.
    ///
    /// Files are read and keys loaded now; nothing is fetched until the first `accessToken()`. The metadata server
    /// is not probed: on a machine without one, the first `accessToken()` fails `.unreachable` or `.timeout`.
    /// `onRefresh` is called once per token fetch with its outcome (for a metric).
    package static func resolve(
        credentialsFile: String?,
        environment: [String: String],
        endpoints: GoogleEndpoints,
        client: HTTPClient,
        logger: Logger,
        onRefresh: @escaping @Sendable (_ succeeded: Bool) -> Void = { _ in }
    ) throws(GoogleAuthError) -> any GoogleCredentials {
        let http = GoogleHTTP(client: client, logger: logger)
        let fetcher = try fetcher(credentialsFile: credentialsFile, environment: environment, endpoints: endpoints, http: http)
        logger.debug("google credentials resolved", metadata: ["credentials": "\(fetcher.summary)"])
        return CachedCredentials(fetcher: fetcher, fetchTimeout: endpoints.fetchTimeout, logger: logger, onRefresh: onRefresh)
    }

    static func fetcher(
        credentialsFile: String?, environment: [String: String], endpoints: GoogleEndpoints, http: GoogleHTTP
    ) throws(GoogleAuthError) -> any AccessTokenSource {
        if let credentialsFile {
            return try CredentialsFileLoader(endpoints: endpoints, environment: environment, http: http).fetcher(
                path: credentialsFile, origin: "credentialsFile \(credentialsFile)")
        }
        if let path = environment["GOOGLE_APPLICATION_CREDENTIALS"], !path.isEmpty {
            // Set but unreadable is an error, as in Google's libraries: silently falling through would pick other
            // credentials than the operator named.
            return try CredentialsFileLoader(endpoints: endpoints, environment: environment, http: http)
                .fetcher(path: path, origin: "GOOGLE_APPLICATION_CREDENTIALS \(path)")
        }
        if let path = gcloudFile(environment), CredentialsFile.exists(path) {
            return try CredentialsFileLoader(endpoints: endpoints, environment: environment, http: http).fetcher(path: path, origin: "gcloud \(path)")
        }
        let host =
            endpoints.metadataHost ?? environment["GCE_METADATA_HOST"].flatMap { $0.isEmpty ? nil : $0 }
            ?? MetadataServerFetcher.defaultHost
        guard SafeURL.isPlausibleHost(host) else {
            throw GoogleAuthError(.configuration, "the metadata host (GCE_METADATA_HOST) is not host[:port]")
        }
        return MetadataServerFetcher(host: host, http: http)
    }

    /// gcloud's ADC file: `$CLOUDSDK_CONFIG/application_default_credentials.json`, else under
    /// `$HOME/.config/gcloud/`.
    static func gcloudFile(_ environment: [String: String]) -> String? {
        let name = "application_default_credentials.json"
        if let config = environment["CLOUDSDK_CONFIG"], !config.isEmpty { return "\(config)/\(name)" }
        if let home = environment["HOME"], !home.isEmpty { return "\(home)/.config/gcloud/\(name)" }
        return nil
    }
}
