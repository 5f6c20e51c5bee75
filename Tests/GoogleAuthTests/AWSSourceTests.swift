import Foundation
import GoogleAuth
import JOSE
import Testing
import TokenGateTesting

/// Workload Identity Federation from AWS against the stand-in's EC2 metadata service and STS (whose AWS side checks
/// the request's signature as AWS would, and is itself checked against google-auth's aws credentials).
@Suite struct AWSSourceTests {
    @Test func keysAndRegionFromTheEnvironmentNeverAskTheMetadataService() async throws {
        try await GoogleStandIn.with { standIn in
            let (audience, principal) = Federation.pool(202, "aws")
            let arn = "arn:aws:iam::444455556666:user/ci-deployer"
            let secret = "k7Qx/8vN+long/term+secret+for+the+test00"
            try await standIn.control(
                #"{"awsIdentities": [{"accessKeyId": "AKIASTANDINLONGTERM1", "secretAccessKey": "\#(secret)", "arn": "\#(arn)"}]}"#)
            try await standIn.provider(audience)
            try await standIn.register(Fixture.target)
            try await standIn.grant(principal + arn, [Fixture.target])
            try await TemporaryDirectory.with { directory in
                let file = try writeJSON(directory, "aws.json", Federation.aws(standIn, audience: audience))
                let environment = [
                    "HOME": "/nonexistent-home", "AWS_ACCESS_KEY_ID": "AKIASTANDINLONGTERM1", "AWS_SECRET_ACCESS_KEY": secret,
                    "AWS_REGION": "eu-west-3",
                ]
                let credentials = try resolve(file: file, environment: environment)
                #expect(credentials.summary.contains("AWS (region from AWS_REGION, credentials from AWS_ACCESS_KEY_ID)"))
                let token = try await credentials.accessToken()
                #expect(try await standIn.signJwtStatus(for: Fixture.target, with: token) == 200)
                #expect(token.provenance?.contains("region eu-west-3 from AWS_REGION") == true, "\(token.provenance ?? "")")
                #expect(try await standIn.calls(kind: "awsMetadata") == 0)
                #expect(try await standIn.log("sts").last?["subjectTokenType"]?.stringValue == Federation.awsTokenType)

                // A session (AWS_SESSION_TOKEN) and the region from AWS_DEFAULT_REGION: the stand-in's own identity.
                let identity = try await standIn.awsIdentity()
                let session = [
                    "HOME": "/nonexistent-home", "AWS_ACCESS_KEY_ID": Federation.awsKey, "AWS_SECRET_ACCESS_KEY": identity.secret,
                    "AWS_SESSION_TOKEN": try #require(identity.sessionToken), "AWS_DEFAULT_REGION": "ap-southeast-2",
                ]
                _ = try await resolve(file: file, environment: session).accessToken()
                #expect(try await standIn.calls(kind: "sts", principal: principal + Federation.awsARN) == 1)
            }
        }
    }

    /// google-auth's sequence exactly: a session token for the region, another for the role and its keys.
    @Test func imdsv2RegionAndRoleCredentialsThenImpersonation() async throws {
        try await GoogleStandIn.with { standIn in
            let (audience, principal) = Federation.pool(201, "aws")
            try await standIn.provider(audience, subjects: [Federation.awsARN: "ec2-standin"], awsAccountID: "111122223333")
            try await standIn.register(Fixture.impersonated)
            try await standIn.register(Fixture.target)
            try await standIn.grant(principal + "ec2-standin", [Fixture.impersonated])
            try await standIn.grant(Fixture.impersonated, [Fixture.target])
            try await TemporaryDirectory.with { directory in
                let file = try writeJSON(directory, "aws.json", Federation.aws(standIn, audience: audience, impersonating: Fixture.impersonated))
                let credentials = try resolve(file: file)
                #expect(credentials.summary.contains(", IMDSv2)"), "\(credentials.summary)")
                let token = try await credentials.accessToken()
                #expect(try await standIn.signJwtStatus(for: Fixture.target, with: token) == 200)
                #expect(try await standIn.lastPrincipal(of: "signJwt") == Fixture.impersonated)
                let metadata = try await standIn.log("awsMetadata").map {
                    "\($0["method"]?.stringValue ?? "") \($0["path"]?.stringValue ?? "") \($0["status"]?.integerValue ?? 0)"
                }
                #expect(
                    metadata == [
                        "PUT /latest/api/token 200", "GET /latest/meta-data/placement/availability-zone 200", "PUT /latest/api/token 200",
                        "GET /latest/meta-data/iam/security-credentials 200", "GET /latest/meta-data/iam/security-credentials/standin-role 200",
                    ])
                let provenance = token.provenance ?? ""
                #expect(provenance.contains("AWS credentials from the EC2 metadata service (IMDSv2), role standin-role"), "\(provenance)")
                #expect(provenance.contains("region us-east-1 from the availability zone"), "\(provenance)")
                #expect(provenance.contains("a token of \(Fixture.impersonated) from IAM generateAccessToken"), "\(provenance)")
            }
        }
    }

    /// A refused session token PUT ends the fetch: no GET without it (IMDSv1), no STS call.
    @Test func imdsv2RefusedIsAnErrorNeverAFallBackToIMDSv1() async throws {
        try await GoogleStandIn.with { standIn in
            let (audience, _) = Federation.pool(203, "aws")
            try await standIn.provider(audience)
            try await standIn.control(#"{"faults": {"awsMetadata": {"mode": "imdsv2Token", "count": -1}}, "awsMetadata": {"imdsv2": "optional"}}"#)
            try await TemporaryDirectory.with { directory in
                let file = try writeJSON(directory, "aws.json", Federation.aws(standIn, audience: audience))
                let error = await tokenError(try resolve(file: file))
                #expect(error?.kind == .refused(status: 403))
                #expect(error?.message.contains("the AWS metadata session token URL (IMDSv2)") == true, "\(error?.message ?? "")")
                let statuses = try await standIn.log("awsMetadata").map { $0["method"]?.stringValue }
                #expect(statuses == ["PUT"])
                #expect(try await standIn.calls(kind: "sts") == 0)
            }
        }
    }

    /// Signed for eu-west-1 (the zone's region) but for the us-east-1 endpoint the file fixes: AWS refuses the
    /// signature's scope, and STS says so.
    @Test func aWrongRegionIsRefusedBySTS() async throws {
        try await GoogleStandIn.with { standIn in
            let (audience, _) = Federation.pool(204, "aws")
            try await standIn.provider(audience)
            try await standIn.control(#"{"awsMetadata": {"availabilityZone": "eu-west-1a"}}"#)
            try await TemporaryDirectory.with { directory in
                let fixed = "https://sts.us-east-1.amazonaws.com?Action=GetCallerIdentity&Version=2011-06-15"
                let file = try writeJSON(directory, "aws.json", Federation.aws(standIn, audience: audience, verificationURL: fixed))
                let error = await tokenError(try resolve(file: file))
                #expect(error?.kind == .refused(status: 400))
                #expect(error?.message.contains("SignatureDoesNotMatch") == true, "\(error?.message ?? "")")
                #expect(error?.message.contains("valid region") == true, "\(error?.message ?? "")")
            }
        }
    }

    @Test func anExpiredSessionIsRefusedBySTS() async throws {
        try await GoogleStandIn.with { standIn in
            let (audience, _) = Federation.pool(205, "aws")
            try await standIn.provider(audience)
            try await standIn.control(#"{"awsIdentities": [{"accessKeyId": "\#(Federation.awsKey)", "expired": true}]}"#)
            try await TemporaryDirectory.with { directory in
                let file = try writeJSON(directory, "aws.json", Federation.aws(standIn, audience: audience))
                let error = await tokenError(try resolve(file: file))
                #expect(error?.kind == .refused(status: 400))
                #expect(error?.message.contains("ExpiredToken") == true, "\(error?.message ?? "")")
            }
        }
    }

    /// The serialisation is google-auth's byte for byte: the expected text is what
    /// `urllib.parse.quote(json.dumps(request, separators=(",", ":"), sort_keys=True))` printed for this request.
    @Test func theSubjectTokenIsSerialisedAsGoogleAuthSerialisesIt() {
        let token = AWSCallerIdentityRequest.serialize(
            url: "https://sts.us-east-1.amazonaws.com?Action=GetCallerIdentity&Version=2011-06-15", method: "POST",
            headers: [
                (
                    "Authorization",
                    "AWS4-HMAC-SHA256 Credential=ASIAEXAMPLE/20150830/us-east-1/sts/aws4_request, SignedHeaders=host;x-amz-date, Signature=abc"
                ),
                ("host", "sts.us-east-1.amazonaws.com"), ("x-amz-date", "20150830T123600Z"), ("x-amz-security-token", "IQoJb3/+x=é\"\\\n"),
                ("x-goog-cloud-target-resource", "//iam.googleapis.com/projects/1/locations/global/workloadIdentityPools/p/providers/a"),
            ])
        let expected =
            "%7B%22headers%22%3A%5B%7B%22key%22%3A%22Authorization%22%2C%22value%22%3A%22AWS4-HMAC-SHA256%20Credential%3DASIAEXAMPLE"
            + "/20150830/us-east-1/sts/aws4_request%2C%20SignedHeaders%3Dhost%3Bx-amz-date%2C%20Signature%3Dabc%22%7D%2C%7B%22key%22%3A"
            + "%22host%22%2C%22value%22%3A%22sts.us-east-1.amazonaws.com%22%7D%2C%7B%22key%22%3A%22x-amz-date%22%2C%22value%22%3A%22"
            + "20150830T123600Z%22%7D%2C%7B%22key%22%3A%22x-amz-security-token%22%2C%22value%22%3A%22IQoJb3/%2Bx%3D%5Cu00e9%5C%22%5C%5C"
            + "%5Cn%22%7D%2C%7B%22key%22%3A%22x-goog-cloud-target-resource%22%2C%22value%22%3A%22//iam.googleapis.com/projects/1/"
            + "locations/global/workloadIdentityPools/p/providers/a%22%7D%5D%2C%22method%22%3A%22POST%22%2C%22url%22%3A%22https%3A//"
            + "sts.us-east-1.amazonaws.com%3FAction%3DGetCallerIdentity%26Version%3D2011-06-15%22%7D"
        #expect(token == expected)
    }

    /// The request is google-auth's in headers and order, with the target resource signed as well (Google's
    /// recommendation; google-auth leaves it unsigned).
    @Test func theSignedRequestSignsTheTargetResource() throws {
        let credentials = AWSSignatureV4.Credentials(accessKeyID: "ASIAEXAMPLE", secretAccessKey: "secret", sessionToken: "session")
        let token = try AWSCallerIdentityRequest.subjectToken(
            url: "https://sts-fips.us-east-2.amazonaws.com?Action=GetCallerIdentity&Version=2011-06-15", region: "us-east-2",
            audience: Fixture.audience, credentials: credentials, epochSeconds: 1_440_938_160)
        let decoded = try #require(token.removingPercentEncoding)
        let request = try #require(try JSON.parse(Array(decoded.utf8)).objectValue)
        #expect(request.keys.sorted() == ["headers", "method", "url"])
        let headers = (request["headers"]?.arrayValue ?? []).compactMap(\.objectValue)
        let names = headers.compactMap { $0["key"]?.stringValue }
        #expect(names == ["Authorization", "host", "x-amz-date", "x-amz-security-token", "x-goog-cloud-target-resource"])
        let authorization = headers.first?["value"]?.stringValue ?? ""
        #expect(authorization.hasPrefix("AWS4-HMAC-SHA256 Credential=ASIAEXAMPLE/20150830/us-east-2/sts/aws4_request, "))
        #expect(authorization.contains("SignedHeaders=host;x-amz-date;x-amz-security-token;x-goog-cloud-target-resource, "))
        #expect(headers[1]["value"] == "sts-fips.us-east-2.amazonaws.com" && headers[2]["value"] == "20150830T123600Z")
        #expect(headers[4]["value"]?.stringValue == Fixture.audience)
    }

    @Test(
        arguments: [
            ("aws2", [("environment_id", JSONValue.string("aws2"))], "\"credential_source.environment_id\""),
            ("not aws", [("environment_id", .string("azure1"))], "\"credential_source.environment_id\""),
            ("no verification URL", [("regional_cred_verification_url", nil)], "\"credential_source.regional_cred_verification_url\""),
            ("http verification URL", [("regional_cred_verification_url", .string("http://sts.{region}.amazonaws.com"))], "https://"),
            (
                "metadata elsewhere", [("region_url", .string("http://10.0.0.1/latest/meta-data/placement/availability-zone"))],
                "\"credential_source.region_url\""
            ),
            ("no region", [("region_url", nil)], "AWS_REGION"),
            ("no credentials", [("url", nil)], "AWS_ACCESS_KEY_ID"),
        ] as [(String, [(String, JSONValue?)], String)])
    func aMalformedAWSSourceIsALocatedConfigurationError(_ case: String, changes: [(String, JSONValue?)], expected: String) async throws {
        try await TemporaryDirectory.with { directory in
            var source: JSONObject = [
                "environment_id": "aws1", "region_url": "http://169.254.169.254/latest/meta-data/placement/availability-zone",
                "url": "http://169.254.169.254/latest/meta-data/iam/security-credentials",
                "imdsv2_session_token_url": "http://[fd00:ec2::254]/latest/api/token",
                "regional_cred_verification_url": .string(Federation.verificationURL),
            ]
            // Untouched, the file is good: AWS's own metadata addresses pass where no other plain http:// does.
            let good = try writeJSON(directory, "good.json", ConfigurationTests.external.with("credential_source", .object(source)))
            #expect(try resolve(file: good).summary.contains("AWS ("))
            for (name, value) in changes { source[name] = value }
            let path = try writeJSON(directory, "aws.json", ConfigurationTests.external.with("credential_source", .object(source)))
            let error = configurationError(path)
            #expect(error?.message.contains(path) == true, "\(`case`)")
            #expect(error?.message.contains(expected) == true, "\(`case`): \(error?.message ?? "")")
        }
    }

    @Test func aRegionVariableThatIsNoRegionIsAConfigurationError() async throws {
        try await GoogleStandIn.with { standIn in
            try await TemporaryDirectory.with { directory in
                let file = try writeJSON(directory, "aws.json", Federation.aws(standIn, audience: Fixture.audience))
                let error = configurationError(file, environment: ["HOME": "/nonexistent-home", "AWS_REGION": "us-east-1.evil.example/"])
                #expect(error?.message.contains("AWS_REGION is not an AWS region") == true, "\(error?.message ?? "")")
            }
        }
    }
}

extension JSONObject {
    /// This object with `field` set (or removed, for `nil`).
    func with(_ field: String, _ value: JSONValue?) -> JSONObject {
        var copy = self
        copy[field] = value
        return copy
    }
}
