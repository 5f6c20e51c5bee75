import Foundation
import GoogleAuth
import JOSE
import Testing
import TokenGateTesting

/// Workload Identity Federation against the stand-in: its pools, its AWS identities and metadata service, its X.509
/// clients, and external_account files for each source, written as `gcloud iam workload-identity-pools
/// create-cred-config` writes them (with the stand-in's URLs).
enum Federation {
    static let awsTokenType = "urn:ietf:params:aws:token-type:aws4_request"
    static let mtlsTokenType = "urn:ietf:params:oauth:token-type:mtls"
    static let idTokenType = "urn:ietf:params:oauth:token-type:id_token"
    static let awsKey = "ASIASTANDIN000000001"
    static let awsARN = "arn:aws:sts::111122223333:assumed-role/standin-role/i-0123456789abcdef0"
    static let verificationURL = "https://sts.{region}.amazonaws.com?Action=GetCallerIdentity&Version=2011-06-15"

    /// A workload identity pool provider's audience and its principals' prefix.
    static func pool(_ number: Int, _ name: String) -> (audience: String, principal: String) {
        let pool = "projects/\(number)/locations/global/workloadIdentityPools/\(name)-pool"
        return ("//iam.googleapis.com/\(pool)/providers/\(name)", "principal://iam.googleapis.com/\(pool)/subject/")
    }

    /// An AWS external_account file's object: metadata URLs on the stand-in, the verification URL AWS's.
    static func aws(
        _ standIn: GoogleStandIn, audience: String, imdsv2: Bool = true, verificationURL: String = verificationURL,
        impersonating target: String? = nil
    ) -> JSONObject {
        var source: JSONObject = [
            "environment_id": "aws1", "region_url": .string("\(standIn.baseURL)/latest/meta-data/placement/availability-zone"),
            "url": .string("\(standIn.baseURL)/latest/meta-data/iam/security-credentials"),
            "regional_cred_verification_url": .string(verificationURL),
        ]
        if imdsv2 { source["imdsv2_session_token_url"] = .string("\(standIn.baseURL)/latest/api/token") }
        return external(standIn, audience: audience, type: awsTokenType, source: source, impersonating: target)
    }

    /// An executable-sourced external_account file's object running executable_source.py with `arguments`.
    static func executable(
        _ standIn: GoogleStandIn, audience: String, arguments: String, timeoutMillis: Int64 = 5000, outputFile: String? = nil,
        impersonating target: String? = nil
    ) -> JSONObject {
        var executable: JSONObject = [
            "command": .string("\(GoogleStandIn.executableSourcePath) \(arguments)"), "timeout_millis": .integer(timeoutMillis),
        ]
        if let outputFile { executable["output_file"] = .string(outputFile) }
        return external(standIn, audience: audience, type: idTokenType, source: ["executable": .object(executable)], impersonating: target)
    }

    /// An X.509 external_account file's object, STS and IAM on the stand-in's mTLS port.
    static func certificate(
        _ standIn: GoogleStandIn, audience: String, configuration: String, trustChain: String? = nil, impersonating target: String? = nil
    ) -> JSONObject {
        var certificate: JSONObject = ["use_default_certificate_config": false, "certificate_config_location": .string(configuration)]
        if let trustChain { certificate["trust_chain_path"] = .string(trustChain) }
        var object = external(standIn, audience: audience, type: mtlsTokenType, source: ["certificate": .object(certificate)])
        object["token_url"] = .string("\(standIn.mtlsBaseURL)/v1/token")
        if let target {
            object["service_account_impersonation_url"] = .string(
                "\(standIn.mtlsBaseURL)/v1/projects/-/serviceAccounts/\(target):generateAccessToken")
        }
        return object
    }

    static func external(
        _ standIn: GoogleStandIn, audience: String, type: String, source: JSONObject, impersonating target: String? = nil
    ) -> JSONObject {
        var object: JSONObject = [
            "type": "external_account", "audience": .string(audience), "subject_token_type": .string(type),
            "token_url": .string("\(standIn.baseURL)/v1/token"), "credential_source": .object(source),
        ]
        if let target { object["service_account_impersonation_url"] = .string(standIn.impersonationURL(target)) }
        return object
    }

    /// An environment for executable sources: allowed, with a PATH that finds python3 (the script's interpreter).
    static func executableEnvironment(allowed: String? = "1") -> [String: String] {
        var environment = ["HOME": "/nonexistent-home", "PATH": ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"]
        if let allowed { environment["GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES"] = allowed }
        return environment
    }
}

extension GoogleStandIn {
    /// Registers a workload (or workforce) pool provider with `subjects` (subject token, ARN or CN → subject).
    func provider(_ audience: String, subjects: [String: String] = [:], awsAccountID: String? = nil) async throws {
        let map = subjects.map { "\(jsonLiteral($0.key)): \(jsonLiteral($0.value))" }.joined(separator: ", ")
        let account = awsAccountID.map { #", "awsAccountId": "\#($0)""# } ?? ""
        try await control(#"{"workloadProviders": [{"audience": "\#(audience)", "subjects": {\#(map)}\#(account)}]}"#)
    }

    /// A registered AWS identity's secret access key and session token.
    func awsIdentity(_ accessKeyID: String = Federation.awsKey) async throws -> (secret: String, sessionToken: String?) {
        let identity = try await state()["aws"]?.objectValue?["identities"]?.objectValue?[accessKeyID]?.objectValue
        return (try #require(identity?["secretAccessKey"]?.stringValue), identity?["sessionToken"]?.stringValue)
    }

    /// An X.509 client's files (`certFile`, `keyFile`, `trustChainFile`, `certificateConfigFile`, `sha256`), issuing
    /// it first with `spec` unless it is the stand-in's own "workload".
    func x509Client(_ name: String, spec: String? = nil) async throws -> JSONObject {
        let state = if let spec { try await control(#"{"x509Clients": [\#(spec)]}"#) } else { try await self.state() }
        return try #require(state["x509"]?.objectValue?["clients"]?.objectValue?[name]?.objectValue)
    }
}

/// `text` as a JSON string literal, for control bodies.
func jsonLiteral(_ text: String) -> String { String(decoding: JSON.serialize(.string(text)), as: UTF8.self) }
