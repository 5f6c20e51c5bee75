import Foundation
import JOSE
import Testing
import TokenGateTesting

/// `check-config --online` with Workload Identity Federation: for each provider, the credential source it found
/// (AWS, an executable, an X.509 certificate) and what it obtained on the way to an access token.
extension CheckConfigOnlineCLITests {
    static func pool(_ name: String) -> (audience: String, principal: String) {
        let pool = "projects/888/locations/global/workloadIdentityPools/\(name)-pool"
        return ("//iam.googleapis.com/\(pool)/providers/\(name)", "principal://iam.googleapis.com/\(pool)/subject/")
    }

    @Test func namesEachFederatedSourceAndWhatItObtained() async throws {
        try await GoogleStandIn.with { standIn in
            let aws = Self.pool("aws")
            let exec = Self.pool("exec")
            let x509 = Self.pool("x509")
            let arn = "arn:aws:sts::111122223333:assumed-role/standin-role/i-0123456789abcdef0"
            let state = try await standIn.control(
                """
                {"accounts": [{"email": "\(Self.consumer)"}],
                 "workloadProviders": [{"audience": "\(aws.audience)"}, {"audience": "\(exec.audience)", "subjects": {"exe-token": "worker"}},
                                       {"audience": "\(x509.audience)"}],
                 "grants": {"\(aws.principal)\(arn)": ["\(Self.consumer)"], "\(exec.principal)worker": ["\(Self.consumer)"],
                            "\(x509.principal)tokengate-workload": ["\(Self.consumer)"]}}
                """)
            let workload = state["x509"]?.objectValue?["clients"]?.objectValue?["workload"]?.objectValue
            let certificateConfiguration = try #require(workload?["certificateConfigFile"]?.stringValue)
            let fingerprint = try #require(workload?["sha256"]?.stringValue)
            func external(_ audience: String, _ type: String, _ source: JSONObject, tokenURL: String = "\(standIn.baseURL)/v1/token") -> String {
                let object: JSONObject = [
                    "type": "external_account", "audience": .string(audience), "subject_token_type": .string(type),
                    "token_url": .string(tokenURL), "credential_source": .object(source),
                ]
                return String(decoding: JSON.serialize(.object(object)), as: UTF8.self)
            }
            try await withCLI { cli in
                let awsFile = try cli.write(
                    "aws.json",
                    external(
                        aws.audience, "urn:ietf:params:aws:token-type:aws4_request",
                        [
                            "environment_id": "aws1", "region_url": .string("\(standIn.baseURL)/latest/meta-data/placement/availability-zone"),
                            "url": .string("\(standIn.baseURL)/latest/meta-data/iam/security-credentials"),
                            "imdsv2_session_token_url": .string("\(standIn.baseURL)/latest/api/token"),
                            "regional_cred_verification_url": "https://sts.{region}.amazonaws.com?Action=GetCallerIdentity&Version=2011-06-15",
                        ]))
                let execFile = try cli.write(
                    "exec.json",
                    external(
                        exec.audience, "urn:ietf:params:oauth:token-type:jwt",
                        ["executable": .object(["command": .string("\(GoogleStandIn.executableSourcePath) --token exe-token")])]))
                let x509File = try cli.write(
                    "x509.json",
                    external(
                        x509.audience, "urn:ietf:params:oauth:token-type:mtls",
                        ["certificate": .object(["certificate_config_location": .string(certificateConfiguration)])],
                        tokenURL: "\(standIn.mtlsBaseURL)/v1/token"))
                let providers = [("aws-rides", awsFile), ("exec-rides", execFile), ("x509-rides", x509File)].map { id, file in
                    """
                      \(id):
                        backend:
                          type: google-iam
                          serviceAccounts: { consumer: \(Self.consumer) }
                          credentialsFile: \(file)
                          endpoints:
                            iamCredentials: \(standIn.baseURL)
                            publicKeys: \(standIn.baseURL)/service_accounts/v1/jwk/{serviceAccount}
                        clients:
                          - { name: app, type: api-key, keySha256: \(String(repeating: "ab", count: 32)), allow: { consumer: any } }
                    """
                }
                try cli.write("config.yaml", "providers:\n" + providers.joined(separator: "\n"))
                let environment = ["GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES": "1", "SSL_CERT_FILE": standIn.caFile]
                let result = try await cli.run(["check-config", "--online", "config.yaml"], environment: environment)
                #expect(result.status == 0, "\(result)")
                let lines = result.stdout.split(separator: "\n").map(String.init)
                let credentials = lines.filter { $0.hasPrefix("  online:   ok: credentials: workload identity federation") }
                #expect(credentials.count == 3, "\(result)")
                let awsLine = credentials.first { $0.contains(aws.audience) } ?? ""
                #expect(awsLine.contains("subject token from AWS (region from \(standIn.baseURL)/latest"), "\(awsLine)")
                #expect(awsLine.contains("(credentialsFile \(awsFile))"), "\(awsLine)")
                #expect(awsLine.contains("AWS credentials from the EC2 metadata service (IMDSv2), role standin-role, region us-east-1"), "\(awsLine)")
                #expect(awsLine.contains("a federated token from STS; access token until "), "\(awsLine)")
                let execLine = credentials.first { $0.contains(exec.audience) } ?? ""
                #expect(execLine.contains("subject token from the executable \(GoogleStandIn.executableSourcePath)"), "\(execLine)")
                #expect(execLine.contains(": a subject token from a run of the executable"), "\(execLine)")
                let x509Line = credentials.first { $0.contains(x509.audience) } ?? ""
                #expect(x509Line.contains("subject token from the X.509 certificate of \(certificateConfiguration)"), "\(x509Line)")
                #expect(x509Line.contains("client certificate SHA-256 \(fingerprint)"), "\(x509Line)")
                #expect(lines.filter { $0 == "  online:   ok: \(Self.consumer): may sign (consumer)" }.count == 3, "\(result)")
                // Without the operator's switch, the executable's provider is a configuration error, located.
                let refused = try await cli.run(["check-config", "config.yaml"], environment: ["SSL_CERT_FILE": standIn.caFile])
                #expect(refused.status == 2 && refused.stderr.contains("GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES=1"), "\(refused)")
            }
        }
    }
}
