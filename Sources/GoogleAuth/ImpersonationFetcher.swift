import Foundation
import JOSE

/// Service-account impersonation: the source credentials' token buys, through IAM Credentials'
/// `generateAccessToken`, a token of the target account (directly or through `delegates`).
struct ImpersonationFetcher: AccessTokenSource {
    let source: any AccessTokenSource
    /// `https://iamcredentials.googleapis.com/v1/projects/-/serviceAccounts/EMAIL:generateAccessToken`.
    let url: String
    let delegates: [String]
    let lifetimeSeconds: Int64
    /// The file's `quota_project_id`, for the calls made with the impersonated token. generateAccessToken itself
    /// is a call made with the source's token, so it carries the source's (google-auth applies the source
    /// credentials' headers to it).
    let quotaProject: String?
    /// The workload certificate when the source is X.509: IAM is reached over mutual TLS as well, as google-auth
    /// does (its mTLS endpoint).
    var clientCertificate: CertificateSubjectSource?
    let http: GoogleHTTP
    let origin: String

    var summary: String { "service account \(Self.target(of: url)) impersonated by \(source.summary) (\(origin))" }

    var fetchAllowance: Duration { source.fetchAllowance }

    func fetch(deadline: ContinuousClock.Instant) async throws(GoogleAuthError) -> GoogleAccessToken {
        let sourceToken = try await source.fetch(deadline: deadline)
        var body: JSONObject = ["scope": [.string(GoogleScope.cloudPlatform)], "lifetime": .string("\(lifetimeSeconds)s")]
        if !delegates.isEmpty { body["delegates"] = .array(delegates.map { .string(Self.resourceName($0)) }) }
        var request = GoogleRequest.json(url, body, what: "IAM generateAccessToken \(url)", secrets: [sourceToken.value])
        request.headers.append(("Authorization", "Bearer \(sourceToken.value)"))
        if let project = source.quotaProject { request.headers.append(("x-goog-user-project", project)) }
        request.tlsConfiguration = try clientCertificate?.load().tlsConfiguration
        let object = try await http.send(request, deadline: deadline).object()
        let value = try GoogleAnswer.string(object, "accessToken", what: request.what)
        let expireTime = try GoogleAnswer.string(object, "expireTime", what: request.what)
        guard let expiresAt = GoogleTimestamp.epochSeconds(expireTime) else {
            throw GoogleAuthError(.malformedAnswer, "\(request.what) answered with an \"expireTime\" that is not RFC 3339")
        }
        let steps = sourceToken.provenance.map { "\($0); " } ?? ""
        return GoogleAccessToken(
            value: value, expiresAt: expiresAt, provenance: "\(steps)a token of \(Self.target(of: url)) from IAM generateAccessToken")
    }

    /// The account email in an impersonation URL, for summaries.
    static func target(of url: String) -> String {
        guard let start = url.range(of: "/serviceAccounts/"), let end = url.range(of: ":generateAccessToken") else { return url }
        guard start.upperBound <= end.lowerBound else { return url }
        return String(url[start.upperBound..<end.lowerBound]).removingPercentEncoding ?? url
    }

    /// IAM wants `projects/-/serviceAccounts/EMAIL`; files written by hand often hold the email alone.
    static func resourceName(_ delegate: String) -> String {
        delegate.hasPrefix("projects/") ? delegate : "projects/-/serviceAccounts/\(delegate)"
    }
}
