import Foundation

/// The subject token of Workload Identity Federation from AWS: an AWS STS `GetCallerIdentity` request, signed with
/// the workload's AWS credentials but never sent to AWS. Google's STS forwards it to AWS, which answers with the
/// caller's ARN: proof of the AWS identity without the AWS secret leaving the machine.
package enum AWSCallerIdentityRequest {
    /// The `subject_token_type` of these tokens.
    package static let subjectTokenType = "urn:ietf:params:aws:token-type:aws4_request"

    /// The serialised, signed request for `url` (the file's `regional_cred_verification_url`, `{region}` already
    /// replaced), as of `epochSeconds`.
    ///
    /// The headers are google-auth's, in its order: `Authorization`, `host`, `x-amz-date`, `x-amz-security-token`
    /// (with a session token) and `x-goog-cloud-target-resource` (the audience). Unlike google-auth, which leaves it
    /// unsigned, the target resource is signed too, as Google's documentation recommends and its Go library does:
    /// a signature then holds only for the provider it was made for. Google's STS accepts both.
    package static func subjectToken(
        url: String, region: String, audience: String, credentials: AWSSignatureV4.Credentials, epochSeconds: Int64
    ) throws(GoogleAuthError) -> String {
        guard let components = URLComponents(string: url), components.scheme?.lowercased() == "https",
            let host = components.host, !host.isEmpty
        else {
            throw GoogleAuthError(.configuration, "the AWS verification URL \(url) is not an https:// URL with a host")
        }
        // sts.us-east-2.amazonaws.com signs for service "sts", as does sts-fips.us-east-2.amazonaws.com.
        var service = String(host.prefix { $0 != "." })
        if service.hasSuffix("-fips") { service.removeLast(5) }
        let amzDate = AWSSignatureV4.amzDate(epochSeconds: epochSeconds)
        var signed: [(name: String, value: String)] = [("host", host), ("x-amz-date", amzDate)]
        if let sessionToken = credentials.sessionToken { signed.append(("x-amz-security-token", sessionToken)) }
        signed.append(("x-goog-cloud-target-resource", audience))
        let signature = try AWSSignatureV4.sign(
            method: "POST", url: url, headers: signed, payload: [], credentials: credentials, region: region,
            service: service, amzDate: amzDate)
        return serialize(url: url, method: "POST", headers: [("Authorization", signature.authorization)] + signed)
    }

    /// `urllib.parse.quote(json.dumps({"headers": [{"key", "value"}, …], "method", "url"}, separators=(",", ":"),
    /// sort_keys=True))`, the bytes google-auth sends: keys sorted, no spaces, then percent-encoded (`%20`, `/`
    /// kept). No `body`: GetCallerIdentity has none.
    package static func serialize(url: String, method: String, headers: [(name: String, value: String)]) -> String {
        let list = headers.map { "{\"key\":\(LibraryEncoding.jsonString($0.name)),\"value\":\(LibraryEncoding.jsonString($0.value))}" }
        let json =
            "{\"headers\":[\(list.joined(separator: ","))],\"method\":\(LibraryEncoding.jsonString(method)),"
            + "\"url\":\(LibraryEncoding.jsonString(url))}"
        return LibraryEncoding.percentEncode(json)
    }
}
