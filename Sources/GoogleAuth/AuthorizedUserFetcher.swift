import Foundation

/// An `authorized_user` file (gcloud's `application_default_credentials.json`): the refresh token is exchanged at
/// the OAuth token endpoint. The file names no endpoint; Google's libraries use https://oauth2.googleapis.com/token.
struct AuthorizedUserFetcher: AccessTokenSource {
    let clientID: String
    let quotaProject: String?
    let clientSecret: String
    let refreshToken: String
    let tokenURI: String
    let http: GoogleHTTP
    let origin: String

    var summary: String { "user credentials of OAuth client \(clientID) (\(origin))" }

    init(_ fields: CredentialFields, tokenURI: String, http: GoogleHTTP, origin: String) throws(GoogleAuthError) {
        clientID = try fields.string("client_id")
        quotaProject = try fields.optionalString("quota_project_id")
        clientSecret = try fields.string("client_secret")
        refreshToken = try fields.string("refresh_token")
        // Some tools write one; honour it, checked like every other URL from a file.
        self.tokenURI = try fields.optionalURL("token_uri") ?? tokenURI
        self.http = http
        self.origin = origin
    }

    func fetch(deadline: ContinuousClock.Instant) async throws(GoogleAuthError) -> GoogleAccessToken {
        let issuedAt = Int64(Date().timeIntervalSince1970)
        let request = GoogleRequest.form(
            tokenURI,
            [
                ("grant_type", "refresh_token"), ("client_id", clientID), ("client_secret", clientSecret),
                ("refresh_token", refreshToken),
            ],
            what: "the OAuth token endpoint \(tokenURI)", secrets: [clientSecret, refreshToken]
        )
        return try await http.send(request, deadline: deadline).oauthToken(issuedAt: issuedAt)
    }
}
