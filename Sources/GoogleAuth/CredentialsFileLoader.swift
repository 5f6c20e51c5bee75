import JOSE

/// Turns a credentials file into an `AccessTokenSource` by its `type`.
struct CredentialsFileLoader: Sendable {
    let endpoints: GoogleEndpoints
    let environment: [String: String]
    let http: GoogleHTTP

    func fetcher(path: String, origin: String) throws(GoogleAuthError) -> any AccessTokenSource {
        let file = try CredentialsFile(path: path)
        if let problem = SafeURL.problem(endpoints.oauthToken) {
            throw GoogleAuthError(.configuration, "the OAuth token endpoint \(endpoints.oauthToken) \(problem)")
        }
        let fields = file.fields
        switch try fields.string("type") {
        case "service_account":
            return try ServiceAccountFetcher(fields, defaultTokenURI: endpoints.oauthToken, http: http, origin: origin)
        case "authorized_user":
            return try AuthorizedUserFetcher(fields, tokenURI: endpoints.oauthToken, http: http, origin: origin)
        case "external_account":
            return try externalAccount(fields, origin: origin)
        case "impersonated_service_account":
            return try impersonated(fields, origin: origin)
        case let other:
            let known = "service_account, authorized_user, external_account or impersonated_service_account"
            throw fields.error("type", "is \(Sanitized.quote(other)), not \(known)")
        }
    }

    /// `external_account` (Workload Identity Federation), then impersonation when the file names its URL.
    private func externalAccount(_ fields: CredentialFields, origin: String) throws(GoogleAuthError) -> any AccessTokenSource {
        let federation = try ExternalAccountFetcher(fields, environment: environment, http: http, origin: origin)
        guard let url = try fields.optionalURL("service_account_impersonation_url") else { return federation }
        let lifetime =
            try fields.optionalObject("service_account_impersonation")?
            .optionalInteger("token_lifetime_seconds", in: 600...43_200) ?? 3600
        return ImpersonationFetcher(
            source: federation, url: url, delegates: [], lifetimeSeconds: lifetime, quotaProject: federation.quotaProject,
            clientCertificate: federation.source as? CertificateSubjectSource, http: http, origin: origin)
    }

    /// `impersonated_service_account` (gcloud's `--impersonate-service-account` ADC): its source credentials are a
    /// nested service_account or authorized_user object, with a `quota_project_id` of their own.
    private func impersonated(_ fields: CredentialFields, origin: String) throws(GoogleAuthError) -> any AccessTokenSource {
        let url = try fields.url("service_account_impersonation_url")
        let delegates = try fields.stringArray("delegates")
        let sourceFields = try fields.object("source_credentials")
        let source: any AccessTokenSource
        switch try sourceFields.string("type") {
        case "service_account":
            source = try ServiceAccountFetcher(sourceFields, defaultTokenURI: endpoints.oauthToken, http: http, origin: "source_credentials")
        case "authorized_user":
            source = try AuthorizedUserFetcher(sourceFields, tokenURI: endpoints.oauthToken, http: http, origin: "source_credentials")
        case let other:
            throw sourceFields.error("type", "is \(Sanitized.quote(other)), not service_account or authorized_user")
        }
        return ImpersonationFetcher(
            source: source, url: url, delegates: delegates, lifetimeSeconds: 3600,
            quotaProject: try fields.optionalString("quota_project_id"), http: http, origin: origin)
    }
}
