import Foundation
import JOSE

/// An `external_account` file (Workload Identity Federation): a subject token from elsewhere (a file or URL, AWS,
/// an executable, an X.509 certificate; see `SubjectTokenSources`) exchanged at Google's STS (RFC 8693) for a
/// federated token. With `service_account_impersonation_url`, an `ImpersonationFetcher` then trades that for a
/// service account's token.
struct ExternalAccountFetcher: TokenFetcher {
    static let tokenExchange = "urn:ietf:params:oauth:grant-type:token-exchange"
    static let accessTokenType = "urn:ietf:params:oauth:token-type:access_token"

    let audience: String
    let subjectTokenType: String
    let tokenURL: String
    let source: any SubjectTokenSource
    /// `client_id`/`client_secret` as HTTP Basic, when the file has them (some workforce pools).
    let clientAuthorization: String?
    let workforcePoolUserProject: String?
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
        if let workforcePoolUserProject, clientAuthorization == nil {
            form.append(("options", String(decoding: JSON.serialize(.object(["userProject": .string(workforcePoolUserProject)])), as: UTF8.self)))
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
}
