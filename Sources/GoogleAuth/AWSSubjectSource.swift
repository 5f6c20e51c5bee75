import Foundation
import JOSE

/// `credential_source.environment_id: aws1`: the workload's AWS identity, proven by a signed `GetCallerIdentity`
/// request (`AWSCallerIdentityRequest`). As google-auth finds them, at every fetch:
/// - the region from `AWS_REGION`, else `AWS_DEFAULT_REGION`, else the EC2 instance metadata service's
///   availability zone (`region_url`) without its last letter;
/// - the credentials from `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY` (with `AWS_SESSION_TOKEN`), else from the
///   metadata service: the role named at `url`, then that role's keys at `url/ROLE`.
/// With `imdsv2_session_token_url`, each of those two metadata steps first asks for an IMDSv2 session token (a PUT)
/// and sends it; a refused PUT is an error, never a fall back to IMDSv1.
struct AWSSubjectSource: SubjectTokenSource {
    /// google-auth's session lifetime: each token is used at once, for one or two requests.
    static let sessionTokenSeconds = "300"
    static let environmentRegions = ["AWS_REGION", "AWS_DEFAULT_REGION"]

    let verificationURL: String
    let regionURL: String?
    let credentialsURL: String?
    let sessionTokenURL: String?
    let audience: String
    /// The region and the variable it came from, when the environment has one.
    let environmentRegion: (region: String, variable: String)?
    let environmentCredentials: AWSSignatureV4.Credentials?
    let http: GoogleHTTP

    var summary: String {
        let region = environmentRegion.map { "region from \($0.variable)" } ?? "region from \(regionURL ?? "")"
        let keys = environmentCredentials == nil ? "credentials from \(credentialsURL ?? "")" : "credentials from AWS_ACCESS_KEY_ID"
        let asksMetadata = environmentRegion == nil || environmentCredentials == nil
        return "AWS (\(region), \(keys)\(asksMetadata && sessionTokenURL != nil ? ", IMDSv2" : ""))"
    }

    var fetchAllowance: Duration { .zero }

    init(_ fields: CredentialFields, context: SubjectTokenContext) throws(GoogleAuthError) {
        let environmentID = try fields.string("environment_id")
        let version = environmentID.dropFirst(3)
        guard environmentID.hasPrefix("aws"), !version.isEmpty, version.allSatisfy(\.isASCII), version.allSatisfy(\.isNumber) else {
            throw fields.error("environment_id", "is not \"aws1\"")
        }
        guard version == "1" else { throw fields.error("environment_id", "names AWS version \(version); only aws1 is supported") }
        verificationURL = try fields.string("regional_cred_verification_url")
        let example = verificationURL.replacing("{region}", with: "us-east-1")
        guard let components = URLComponents(string: example), components.scheme?.lowercased() == "https", components.host?.isEmpty == false else {
            throw fields.error("regional_cred_verification_url", "is not an https:// URL with a host")
        }
        regionURL = try fields.optionalAWSMetadataURL("region_url")
        credentialsURL = try fields.optionalAWSMetadataURL("url")
        sessionTokenURL = try fields.optionalAWSMetadataURL("imdsv2_session_token_url")
        audience = context.audience
        http = context.http
        let environment = context.environment
        environmentRegion = try Self.region(in: environment)
        if let key = environment["AWS_ACCESS_KEY_ID"], !key.isEmpty, let secret = environment["AWS_SECRET_ACCESS_KEY"], !secret.isEmpty {
            let session = environment["AWS_SESSION_TOKEN"].flatMap { $0.isEmpty ? nil : $0 }
            environmentCredentials = AWSSignatureV4.Credentials(accessKeyID: key, secretAccessKey: secret, sessionToken: session)
        } else {
            environmentCredentials = nil
        }
        if environmentRegion == nil, regionURL == nil {
            throw fields.error("region_url", "is missing and neither AWS_REGION nor AWS_DEFAULT_REGION is set: the AWS region is unknown")
        }
        if environmentCredentials == nil, credentialsURL == nil {
            throw fields.error("url", "is missing and AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not both set: there are no AWS credentials")
        }
    }

    func subjectToken(deadline: ContinuousClock.Instant) async throws(GoogleAuthError) -> SubjectToken {
        let (region, regionFrom) = try await region(deadline: deadline)
        let (credentials, credentialsFrom) = try await credentials(deadline: deadline)
        let url = verificationURL.replacing("{region}", with: region)
        let token = try AWSCallerIdentityRequest.subjectToken(
            url: url, region: region, audience: audience, credentials: credentials, epochSeconds: Int64(Date().timeIntervalSince1970))
        let host = URLComponents(string: url)?.host ?? url
        return SubjectToken(
            value: token,
            provenance: "AWS credentials \(credentialsFrom), region \(region) \(regionFrom): a signed GetCallerIdentity request for \(host)")
    }

    /// The region and where it came from.
    private func region(deadline: ContinuousClock.Instant) async throws(GoogleAuthError) -> (String, String) {
        if let environmentRegion { return (environmentRegion.region, "from \(environmentRegion.variable)") }
        guard let regionURL else { throw GoogleAuthError(.configuration, "the AWS region is unknown") }
        let session = try await sessionToken(deadline: deadline)
        let zone = try await metadata(regionURL, session: session, what: "the AWS metadata region URL \(regionURL)", deadline: deadline)
        // An availability zone is its region and one letter: us-east-1b is in us-east-1.
        let region = String(zone.dropLast())
        guard Self.isRegion(region) else {
            throw GoogleAuthError(
                .malformedAnswer, "the AWS metadata region URL \(regionURL) answered with something other than an availability zone")
        }
        return (region, "from the availability zone of the EC2 metadata service\(session == nil ? "" : " (IMDSv2)")")
    }

    /// The credentials and where they came from.
    private func credentials(deadline: ContinuousClock.Instant) async throws(GoogleAuthError) -> (AWSSignatureV4.Credentials, String) {
        if let environmentCredentials {
            let session = environmentCredentials.sessionToken == nil ? "" : " with AWS_SESSION_TOKEN"
            return (environmentCredentials, "from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY\(session)")
        }
        guard let credentialsURL else { throw GoogleAuthError(.configuration, "there are no AWS credentials") }
        let session = try await sessionToken(deadline: deadline)
        let role = try await metadata(
            credentialsURL, session: session, what: "the AWS metadata credentials URL \(credentialsURL)", deadline: deadline)
        // A role name goes into the next URL's path: IAM allows letters, digits and +=,.@_- only.
        guard !role.isEmpty, role.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "+=,.@_-".contains($0)) }) else {
            throw GoogleAuthError(.malformedAnswer, "the AWS metadata credentials URL \(credentialsURL) answered with no role name")
        }
        let roleURL = "\(credentialsURL.hasSuffix("/") ? String(credentialsURL.dropLast()) : credentialsURL)/\(role)"
        let what = "the AWS metadata credentials URL \(roleURL)"
        let answer = try await metadata(roleURL, session: session, what: what, deadline: deadline)
        guard let value = try? JSON.parse(Array(answer.utf8)), case .object(let object) = value,
            let key = object["AccessKeyId"]?.stringValue, !key.isEmpty,
            let secret = object["SecretAccessKey"]?.stringValue, !secret.isEmpty
        else {
            throw GoogleAuthError(.malformedAnswer, "\(what) answered without \"AccessKeyId\" and \"SecretAccessKey\"")
        }
        let token = object["Token"]?.stringValue.flatMap { $0.isEmpty ? nil : $0 }
        let credentials = AWSSignatureV4.Credentials(accessKeyID: key, secretAccessKey: secret, sessionToken: token)
        return (credentials, "from the EC2 metadata service\(session == nil ? "" : " (IMDSv2)"), role \(role)")
    }

    /// An IMDSv2 session token, when the file names its URL.
    private func sessionToken(deadline: ContinuousClock.Instant) async throws(GoogleAuthError) -> String? {
        guard let sessionTokenURL else { return nil }
        let what = "the AWS metadata session token URL (IMDSv2) \(sessionTokenURL)"
        let request = GoogleRequest(
            method: "PUT", url: sessionTokenURL, headers: [("X-aws-ec2-metadata-token-ttl-seconds", Self.sessionTokenSeconds)],
            what: what)
        let body = try await http.send(request, deadline: deadline).body
        // It goes into a header: printable ASCII only.
        guard let token = String(validating: body, as: UTF8.self)?.trimmingCharacters(in: .whitespacesAndNewlines),
            !token.isEmpty, token.unicodeScalars.allSatisfy({ (0x21...0x7E).contains($0.value) })
        else { throw GoogleAuthError(.malformedAnswer, "\(what) answered with no session token") }
        return token
    }

    /// The text a metadata URL answers (a 2xx), asked with the IMDSv2 session token if there is one.
    private func metadata(
        _ url: String, session: String?, what: String, deadline: ContinuousClock.Instant
    ) async throws(GoogleAuthError) -> String {
        let headers = session.map { [("X-aws-ec2-metadata-token", $0)] } ?? []
        let request = GoogleRequest(method: "GET", url: url, headers: headers, what: what, secrets: session.map { [$0] } ?? [])
        guard let text = String(validating: try await http.send(request, deadline: deadline).body, as: UTF8.self) else {
            throw GoogleAuthError(.malformedAnswer, "\(what) answered with something other than text")
        }
        return text.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// The first of AWS_REGION and AWS_DEFAULT_REGION that is set, and which it was.
    private static func region(in environment: [String: String]) throws(GoogleAuthError) -> (region: String, variable: String)? {
        for variable in environmentRegions {
            guard let region = environment[variable], !region.isEmpty else { continue }
            guard isRegion(region) else { throw GoogleAuthError(.configuration, "\(variable) is not an AWS region such as us-east-1") }
            return (region, variable)
        }
        return nil
    }

    /// An AWS region's shape (us-east-1, us-gov-west-1, cn-north-1): it goes into a host name.
    static func isRegion(_ text: String) -> Bool {
        !text.isEmpty && text.count <= 32 && text.allSatisfy { $0.isASCII && ($0.isLowercase || $0.isNumber || $0 == "-") }
    }
}
