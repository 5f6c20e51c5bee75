import Foundation
import JOSE

/// A `service_account` key file: an RS256 JWT assertion (kid = `private_key_id`) exchanged at the file's
/// `token_uri` for an access token (RFC 7523 JWT-bearer grant).
struct ServiceAccountFetcher: AccessTokenSource {
    static let jwtBearer = "urn:ietf:params:oauth:grant-type:jwt-bearer"

    let clientEmail: String
    let quotaProject: String?
    let tokenURI: String
    let signer: JWSSigner
    let http: GoogleHTTP
    let origin: String

    var summary: String { "service account \(clientEmail) (\(origin))" }

    /// Reads the fields and loads the key now, so a broken file fails at startup, not at the first token.
    init(_ fields: CredentialFields, defaultTokenURI: String, http: GoogleHTTP, origin: String) throws(GoogleAuthError) {
        clientEmail = try fields.string("client_email")
        quotaProject = try fields.optionalString("quota_project_id")
        let keyID = try fields.string("private_key_id")
        let pem = try fields.string("private_key")
        tokenURI = try fields.optionalURL("token_uri") ?? defaultTokenURI
        do {
            signer = try JWSSigner(key: JWSKey.pem(pem, algorithm: .rs256, keyID: keyID))
        } catch let error as JWSKeyError {
            // The key error says what is wrong with the key (reason, OpenSSL's queue); it never quotes the key.
            throw fields.error("private_key", "is not a usable RSA private key (\(error.reason))")
        } catch {
            throw fields.error("private_key", "is not a usable RSA private key")
        }
        self.http = http
        self.origin = origin
    }

    func fetch(deadline: ContinuousClock.Instant) async throws(GoogleAuthError) -> GoogleAccessToken {
        let issuedAt = Int64(Date().timeIntervalSince1970)
        let assertion: String
        do {
            assertion = try signer.sign(claims: [
                "iss": .string(clientEmail),
                "scope": .string(GoogleScope.cloudPlatform),
                "aud": .string(tokenURI),
                "iat": .integer(issuedAt),
                "exp": .integer(issuedAt + 3600),
            ])
        } catch {
            throw GoogleAuthError(.configuration, "signing the token request of \(clientEmail) failed (\(type(of: error)))")
        }
        let request = GoogleRequest.form(
            tokenURI, [("grant_type", Self.jwtBearer), ("assertion", assertion)],
            what: "the OAuth token endpoint \(tokenURI)", secrets: [assertion]
        )
        return try await http.send(request, deadline: deadline).oauthToken(issuedAt: issuedAt)
    }
}

/// OAuth scopes asked for.
enum GoogleScope {
    /// Every Google Cloud API the principal's IAM roles allow, IAM Credentials' signJwt among them.
    static let cloudPlatform = "https://www.googleapis.com/auth/cloud-platform"
}
