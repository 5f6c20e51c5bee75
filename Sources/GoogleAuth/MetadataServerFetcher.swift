import Foundation

/// The metadata server of GCE, GKE, Cloud Run and Cloud Functions: the attached service account's token, over
/// plain HTTP by Google's design, with `Metadata-Flavor: Google` both ways.
struct MetadataServerFetcher: AccessTokenSource {
    static let defaultHost = "metadata.google.internal"

    let host: String
    let http: GoogleHTTP

    var summary: String { "the metadata server at \(host)" }

    /// The metadata server's tokens bill the principal's own project.
    var quotaProject: String? { nil }

    func fetch(deadline: ContinuousClock.Instant) async throws(GoogleAuthError) -> GoogleAccessToken {
        let issuedAt = Int64(Date().timeIntervalSince1970)
        let scopes = GoogleRequest.formEncode(GoogleScope.cloudPlatform)
        let request = GoogleRequest(
            method: "GET",
            url: "http://\(host)/computeMetadata/v1/instance/service-accounts/default/token?scopes=\(scopes)",
            headers: [("Metadata-Flavor", "Google")],
            what: "the metadata server at \(host)"
        )
        return try await http.send(request, deadline: deadline, expectMetadataFlavor: true).oauthToken(issuedAt: issuedAt)
    }
}
