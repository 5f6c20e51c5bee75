import Foundation
import JOSE
import Testing
import TokenGateCore
import TokenGateTesting

/// The gateway's own identity from Workload Identity Federation, through the real gateway: a google-iam provider
/// whose Application Default Credentials (GOOGLE_APPLICATION_CREDENTIALS) are an external_account file of each
/// source mints a token that verifies with the account's published keys, and each fault of a source shows in
/// `/readyz` as its own reason.
@Suite(.timeLimit(.minutes(5))) struct FederationGatewayTests {
    static let awsARN = "arn:aws:sts::111122223333:assumed-role/standin-role/i-0123456789abcdef0"
    static let verificationURL = "https://sts.{region}.amazonaws.com?Action=GetCallerIdentity&Version=2011-06-15"

    /// A source's pool, and the principal its tokens are for.
    static func pool(_ name: String) -> (audience: String, principalPrefix: String) {
        let pool = "projects/777/locations/global/workloadIdentityPools/\(name)-pool"
        return ("//iam.googleapis.com/\(pool)/providers/\(name)", "principal://iam.googleapis.com/\(pool)/subject/")
    }

    /// What a source needs: its external_account file's object, environment and the principal that signs.
    struct Source {
        var file: JSONObject
        var environment: [String: String] = [:]
        var signer: String
    }

    /// Registers `name`'s provider with the stand-in and builds its file; `fault` names a variant that must fail.
    static func source(_ name: String, fault: String? = nil, fixture: IAMFixture) async throws -> Source {
        let standIn = fixture.standIn
        let (audience, prefix) = pool(name.hasPrefix("aws") ? "aws" : name)
        func external(_ type: String, _ source: JSONObject) -> JSONObject {
            [
                "type": "external_account", "audience": .string(audience), "subject_token_type": .string(type),
                "token_url": .string("\(standIn.baseURL)/v1/token"), "credential_source": .object(source),
            ]
        }
        switch name {
        case "aws-environment", "aws-imdsv2":
            try await standIn.control(#"{"workloadProviders": [{"audience": "\#(audience)", "subjects": {"\#(awsARN)": "ec2"}}]}"#)
            var source: JSONObject = [
                "environment_id": "aws1", "region_url": .string("\(standIn.baseURL)/latest/meta-data/placement/availability-zone"),
                "url": .string("\(standIn.baseURL)/latest/meta-data/iam/security-credentials"),
                "imdsv2_session_token_url": .string("\(standIn.baseURL)/latest/api/token"),
                "regional_cred_verification_url": .string(verificationURL),
            ]
            var environment: [String: String] = [:]
            if name == "aws-environment" {
                let identity = try #require(
                    try await standIn.state()["aws"]?.objectValue?["identities"]?.objectValue?["ASIASTANDIN000000001"]?.objectValue)
                environment = [
                    "AWS_ACCESS_KEY_ID": "ASIASTANDIN000000001", "AWS_SECRET_ACCESS_KEY": identity["secretAccessKey"]?.stringValue ?? "",
                    "AWS_SESSION_TOKEN": identity["sessionToken"]?.stringValue ?? "", "AWS_REGION": "us-west-2",
                ]
            }
            switch fault {
            case "imdsv2 refused": try await standIn.control(#"{"faults": {"awsMetadata": {"mode": "imdsv2Token", "count": -1}}}"#)
            case "wrong region":
                try await standIn.control(#"{"awsMetadata": {"availabilityZone": "eu-west-1a"}}"#)
                source["regional_cred_verification_url"] = "https://sts.us-east-1.amazonaws.com?Action=GetCallerIdentity&Version=2011-06-15"
            case "expired session": try await standIn.control(#"{"awsIdentities": [{"accessKeyId": "ASIASTANDIN000000001", "expired": true}]}"#)
            default: break
            }
            return Source(file: external("urn:ietf:params:aws:token-type:aws4_request", source), environment: environment, signer: prefix + "ec2")
        case "executable":
            try await standIn.control(#"{"workloadProviders": [{"audience": "\#(audience)", "subjects": {"exe-token": "worker"}}]}"#)
            let arguments =
                switch fault {
                case "executable times out": "--mode sleep --sleep 30"
                case "executable prints garbage": "--mode garbage"
                case "executable reports failure": "--mode fail"
                default: "--token exe-token"
                }
            let executable: JSONObject = ["command": .string("\(GoogleStandIn.executableSourcePath) \(arguments)"), "timeout_millis": 5000]
            let environment = [
                "GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES": "1", "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin",
            ]
            return Source(
                file: external("urn:ietf:params:oauth:token-type:jwt", ["executable": .object(executable)]), environment: environment,
                signer: prefix + "worker")
        default:
            // X.509, impersonating the runtime account over mutual TLS too.
            try await standIn.control(#"{"workloadProviders": [{"audience": "\#(audience)"}]}"#)
            let state =
                fault == nil
                ? try await standIn.state() : try await standIn.control(#"{"x509Clients": [{"name": "workload", "ca": "untrusted"}]}"#)
            let client = state["x509"]?.objectValue?["clients"]?.objectValue?["workload"]?.objectValue
            let configuration = try #require(client?["certificateConfigFile"]?.stringValue)
            var file = external(
                "urn:ietf:params:oauth:token-type:mtls",
                ["certificate": .object(["use_default_certificate_config": false, "certificate_config_location": .string(configuration)])])
            file["token_url"] = .string("\(standIn.mtlsBaseURL)/v1/token")
            file["service_account_impersonation_url"] =
                .string("\(standIn.mtlsBaseURL)/v1/projects/-/serviceAccounts/\(IAMFixture.runtime):generateAccessToken")
            try await standIn.control(#"{"grants": {"\#(prefix)tokengate-workload": ["\#(IAMFixture.runtime)"]}}"#)
            return Source(file: file, environment: ["SSL_CERT_FILE": standIn.caFile], signer: IAMFixture.runtime)
        }
    }

    /// The environment ADC reads: GOOGLE_APPLICATION_CREDENTIALS naming the source's file, and its own variables.
    static func environment(_ source: Source, fixture: IAMFixture) throws -> [String: String] {
        let file = try fixture.directory.write("external.json", JSON.serialize(.object(source.file)))
        return try fixture.environment(source.environment.merging(["GOOGLE_APPLICATION_CREDENTIALS": file]) { $1 })
    }

    @Test(arguments: ["aws-environment", "aws-imdsv2", "executable", "x509"])
    func eachFederatedSourceMintsATokenThatVerifies(name: String) async throws {
        let both = [IAMFixture.consumer, IAMFixture.driver]
        let (_, prefix) = Self.pool(name.hasPrefix("aws") ? "aws" : name)
        try await IAMFixture.run(grants: [IAMFixture.runtime: both, prefix + "ec2": both, prefix + "worker": both]) { fixture in
            let source = try await Self.source(name, fixture: fixture)
            let environment = try Self.environment(source, fixture: fixture)
            try await fixture.withGateway(config: try fixture.writeConfig(), environment: environment) { gateway in
                try await IAMFixture.waitForReadiness(gateway)
                let response = try await gateway.get(IAMFixture.token(), bearer: IAMFixture.apiKey)
                #expect(response.status == 200, "\(response.text)")
                let token = try #require(try JSON.parse(response.body).objectValue?["token"]?.stringValue)
                let verified = try await fixture.verifyIndependently(token, as: IAMFixture.consumer)
                #expect(verified.claims["authorization"] == .object(["tripid": "trip-1"]))
                #expect(try await fixture.standIn.calls(kind: "signJwt", principal: source.signer) >= 1)
            }
        }
    }

    @Test(
        arguments: [
            ("aws-imdsv2", "imdsv2 refused", "the AWS metadata session token URL (IMDSv2)"),
            ("aws-imdsv2", "wrong region", "SignatureDoesNotMatch"),
            ("aws-environment", "expired session", "ExpiredToken"),
            ("executable", "executable times out", "did not finish within 5000 ms"),
            ("executable", "executable prints garbage", "answered with something other than a JSON object"),
            ("executable", "executable reports failure", "code 401, message Caller not authorized."),
            ("x509", "untrusted certificate", "trust anchor"),
        ])
    func aSourcesFaultIsItsOwnReadinessReason(name: String, fault: String, reason: String) async throws {
        try await IAMFixture.run { fixture in
            let source = try await Self.source(name, fault: fault, fixture: fixture)
            let environment = try Self.environment(source, fixture: fixture)
            try await fixture.withGateway(config: try fixture.writeConfig(), environment: environment) { gateway in
                let body = try await IAMFixture.waitForReadiness(gateway, status: 503, containing: reason, within: 40)
                #expect(body.contains("no access token yet from") && body.contains("workload identity federation"), "\(body)")
                // 503, or 504 when the mint's own deadline comes first (an executable still running).
                let refused = try await gateway.get(IAMFixture.token(), bearer: IAMFixture.apiKey)
                #expect([503, 504].contains(refused.status) && refused.text.contains("backend_"), "\(refused.text)")
            }
        }
    }
}
