import Foundation
import JOSE

/// An `external_account` file (Workload Identity Federation): a subject token from elsewhere (a file or URL, AWS,
/// an executable, an X.509 certificate; see `SubjectTokenSources`) exchanged at Google's STS (RFC 8693) for a
/// federated token. With `service_account_impersonation_url`, an `ImpersonationFetcher` then trades that for a
/// service account's token.
struct ExternalAccountFetcher: AccessTokenSource {
    static let tokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
    static let accessTokenType = "urn:ietf:params:oauth:token-type:access_token"

    let audience: String
    let subjectTokenType: String
    let tokenURL: String
    let source: any SubjectTokenSource
    /// `client_id`/`client_secret` as HTTP Basic, when the file has them (some workforce pools).
    let clientAuthorization: String?
    /// Sent in STS's `options` (workforce pools only, and only without a client ID, as google-auth sends it).
    let workforcePoolUserProject: String?
    /// The file's `quota_project_id`: never sent to STS (google-auth does not), but on the calls made with the
    /// token (`quotaProject`, and impersonation's generateAccessToken).
    let quotaProject: String?
    let http: GoogleHTTP
    let origin: String

    var summary: String { "workload identity federation \(audience), subject token from \(source.summary) (\(origin))" }

    var fetchAllowance: Duration { source.fetchAllowance }

    init(_ fields: CredentialFields, environment: [String: String], http: GoogleHTTP, origin: String) throws(GoogleAuthError) {
        audience = try fields.string("audience")
        subjectTokenType = try fields.string("subject_token_type")
        tokenURL = try fields.optionalURL("token_url") ?? "https://sts.googleapis.com/v1/token"
        let impersonation = try fields.optionalURL("service_account_impersonation_url")
        let context = SubjectTokenContext(
            audience: audience, subjectTokenType: subjectTokenType, impersonatedEmail: impersonation.map(ImpersonationFetcher.target),
            environment: environment, http: http)
        source = try SubjectTokenSources.make(fields.object("credential_source"), context: context)
        let clientID = try fields.optionalString("client_id")
        if let clientID {
            let secret = try fields.optionalString("client_secret") ?? ""
            clientAuthorization = "Basic " + Data("\(clientID):\(secret)".utf8).base64EncodedString()
        } else {
            clientAuthorization = nil
        }
        workforcePoolUserProject = try fields.optionalString("workforce_pool_user_project")
        if workforcePoolUserProject != nil, !Self.isWorkforcePool(audience) {
            throw fields.error("workforce_pool_user_project", "is set for a workload identity pool; it is for workforce pools only")
        }
        quotaProject = try fields.optionalString("quota_project_id")
        self.http = http
        self.origin = origin
    }

    func fetch(deadline: ContinuousClock.Instant) async throws(GoogleAuthError) -> GoogleAccessToken {
        let subjectToken = try await source.subjectToken(deadline: deadline)
        let issuedAt = Int64(Date().timeIntervalSince1970)
        var form = [
            ("grant_type", Self.tokenExchange), ("audience", audience), ("scope", GoogleScope.cloudPlatform),
            ("requested_token_type", Self.accessTokenType), ("subject_token", subjectToken.value),
            ("subject_token_type", subjectTokenType),
        ]
        // The client ID names the user project by itself (google-auth leaves the option out then).
        if let workforcePoolUserProject, clientAuthorization == nil {
            form.append(("options", LibraryEncoding.stsOptions(userProject: workforcePoolUserProject)))
        }
        var request = GoogleRequest.form(
            tokenURL, form, what: "the STS token exchange \(tokenURL)",
            secrets: [subjectToken.value] + (clientAuthorization.map { [$0] } ?? [])
        )
        request.tlsConfiguration = subjectToken.clientTLS
        if let clientAuthorization { request.headers.append(("Authorization", clientAuthorization)) }
        var token = try await http.send(request, deadline: deadline).oauthToken(issuedAt: issuedAt)
        token.provenance = "\(subjectToken.provenance); a federated token from STS"
        return token
    }

    /// Whether `audience` is a workforce pool provider's (`//iam.googleapis.com/locations/L/workforcePools/…`), as
    /// google-auth tells them apart.
    static func isWorkforcePool(_ audience: String) -> Bool {
        let prefix = "//iam.googleapis.com/locations/"
        guard audience.hasPrefix(prefix) else { return false }
        let rest = audience.dropFirst(prefix.count)
        guard let slash = rest.firstIndex(of: "/"), slash != rest.startIndex else { return false }
        return rest[slash...].hasPrefix("/workforcePools/")
    }
}
