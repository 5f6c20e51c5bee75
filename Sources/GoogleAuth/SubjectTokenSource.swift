import NIOSSL

/// Where an `external_account` file's subject token comes from (its `credential_source`): a file or URL
/// (`FileOrURLSource`), AWS (`AWSSubjectSource`), an executable (`ExecutableSubjectSource`) or an X.509 certificate
/// (`CertificateSubjectSource`). Asked at every fetch: subject tokens rotate.
protocol SubjectTokenSource: Sendable {
    /// What it is, for logs and check-config ("file /var/run/token", "AWS …"); never a secret.
    var summary: String { get }
    /// How much longer than the usual fetch bound a fetch may take with this source: an executable's own timeout,
    /// which the credential file sets (up to two minutes), not the HTTP calls' bound.
    var fetchAllowance: Duration { get }
    /// The current subject token, every request of it finished before `deadline`.
    func subjectToken(deadline: ContinuousClock.Instant) async throws(GoogleAuthError) -> SubjectToken
}

/// A subject token and what it took to obtain it.
struct SubjectToken: Sendable {
    /// The token itself: a secret, never logged.
    let value: String
    /// How it was obtained, for check-config ("AWS credentials from the EC2 metadata service…"); never a secret.
    let provenance: String
    /// The client certificate the STS exchange (and impersonation) must be made with, for X.509 sources.
    var clientTLS: TLSConfiguration?
}

/// What a source may need besides its own `credential_source` object.
struct SubjectTokenContext: Sendable {
    /// The file's `audience`: the workload identity pool provider (AWS signs it into its request).
    let audience: String
    /// The file's `subject_token_type` (an executable is told which it must print).
    let subjectTokenType: String
    /// The account of `service_account_impersonation_url`, if any (an executable is told it).
    let impersonatedEmail: String?
    /// The process environment: AWS's variables, GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES, the certificate
    /// configuration's location, and an executable's own environment.
    let environment: [String: String]
    let http: GoogleHTTP
}

enum SubjectTokenSources {
    /// The source `fields` (the `credential_source` object) describes, as Google's libraries choose it:
    /// `environment_id` is AWS (whose metadata `url` is its own), else `executable`, else exactly one of `file`,
    /// `url` and `certificate`.
    static func make(_ fields: CredentialFields, context: SubjectTokenContext) throws(GoogleAuthError) -> any SubjectTokenSource {
        if fields.has("environment_id") { return try AWSSubjectSource(fields, context: context) }
        let identityPool = ["file", "url", "certificate"].filter { fields.has($0) }
        if fields.has("executable") {
            if let other = identityPool.first {
                throw fields.error("executable", "and \"\(fields.prefix)\(other)\" are both set; one source only")
            }
            return try ExecutableSubjectSource(fields.object("executable"), context: context)
        }
        if identityPool.count > 1 {
            throw fields.error(identityPool[0], "and \"\(fields.prefix)\(identityPool[1])\" are both set; one source only")
        }
        if fields.has("certificate") {
            return try CertificateSubjectSource(fields.object("certificate"), environment: context.environment)
        }
        guard identityPool.isEmpty else { return try FileOrURLSource(fields, http: context.http) }
        throw fields.error("file", "is missing (or \"url\", \"environment_id\", \"executable\" or \"certificate\")")
    }
}
