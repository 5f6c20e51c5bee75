import Foundation
import GoogleAuth
import JOSE
import Testing
import TokenGateTesting

/// X.509 workload certificates: mutual TLS to the stand-in's STS and IAM (its second port, whose server certificate
/// and trusted clients come from its CA, `caFile`), as google-auth's identity_pool credentials do.
@Suite struct CertificateSourceTests {
    /// Trusts the stand-in's CA for the mutual TLS endpoints.
    static func environment(_ standIn: GoogleStandIn) -> [String: String] {
        ["HOME": "/nonexistent-home", "SSL_CERT_FILE": standIn.caFile]
    }

    @Test func theWorkloadCertificateOverMutualTLSThenImpersonation() async throws {
        try await GoogleStandIn.with { standIn in
            let (audience, principal) = Federation.pool(401, "x509")
            try await standIn.provider(audience, subjects: ["tokengate-workload": "gateway"])
            try await standIn.register(Fixture.impersonated)
            try await standIn.register(Fixture.target)
            try await standIn.grant(principal + "gateway", [Fixture.impersonated])
            try await standIn.grant(Fixture.impersonated, [Fixture.target])
            let workload = try await standIn.x509Client("workload")
            let configuration = try #require(workload["certificateConfigFile"]?.stringValue)
            try await TemporaryDirectory.with { directory in
                let file = try writeJSON(
                    directory, "x509.json",
                    Federation.certificate(standIn, audience: audience, configuration: configuration, impersonating: Fixture.impersonated))
                let credentials = try resolve(file: file, environment: Self.environment(standIn))
                #expect(credentials.summary.contains("the X.509 certificate of \(configuration) (certificate_config_location)"))
                let token = try await credentials.accessToken()
                #expect(try await standIn.signJwtStatus(for: Fixture.target, with: token) == 200)
                #expect(try await standIn.lastPrincipal(of: "signJwt") == Fixture.impersonated)
                let sts = try #require(try await standIn.log("sts").last)
                #expect(sts["mtls"] == true && sts["subjectTokenType"]?.stringValue == Federation.mtlsTokenType)
                #expect(sts["principal"]?.stringValue == principal + "gateway")
                // The certificate is presented to IAM too.
                #expect(try await standIn.log("generateAccessToken").last?["mtls"] == true)
                #expect(try await standIn.calls(kind: "mtlsHandshake", principal: "tokengate-workload") >= 1)
                let fingerprint = try #require(workload["sha256"]?.stringValue)
                #expect(token.provenance?.contains("client certificate SHA-256 \(fingerprint)") == true, "\(token.provenance ?? "")")
            }
        }
    }

    /// A certificate issued by an intermediate CA leads to the trusted root only with its trust chain.
    @Test func anIntermediateCertificateNeedsItsTrustChain() async throws {
        try await GoogleStandIn.with { standIn in
            let (audience, principal) = Federation.pool(402, "x509")
            try await standIn.provider(audience)
            let client = try await standIn.x509Client(
                "inter", spec: #"{"name": "inter", "commonName": "inter-workload", "intermediate": true, "keyType": "rsa"}"#)
            let configuration = try #require(client["certificateConfigFile"]?.stringValue)
            let chain = try #require(client["trustChainFile"]?.stringValue)
            try await TemporaryDirectory.with { directory in
                let withChain = try writeJSON(
                    directory, "chain.json", Federation.certificate(standIn, audience: audience, configuration: configuration, trustChain: chain))
                let token = try await resolve(file: withChain, environment: Self.environment(standIn)).accessToken()
                #expect(token.provenance?.contains("with 1 trust chain certificate") == true, "\(token.provenance ?? "")")
                #expect(try await standIn.calls(kind: "sts", principal: principal + "inter-workload") == 1)

                let bare = try writeJSON(directory, "bare.json", Federation.certificate(standIn, audience: audience, configuration: configuration))
                let error = await tokenError(try resolve(file: bare, environment: Self.environment(standIn)))
                #expect(error?.kind == .refused(status: 400))
                #expect(error?.message.contains("trust anchor") == true, "\(error?.message ?? "")")
            }
        }
    }

    /// A certificate of a CA the TLS server accepts but the provider does not trust: STS refuses it.
    @Test func aCertificateOfAnUntrustedCAIsRefusedBySTS() async throws {
        try await GoogleStandIn.with { standIn in
            let (audience, _) = Federation.pool(403, "x509")
            try await standIn.provider(audience)
            let client = try await standIn.x509Client("untrusted", spec: #"{"name": "untrusted", "ca": "untrusted"}"#)
            try await TemporaryDirectory.with { directory in
                let configuration = try #require(client["certificateConfigFile"]?.stringValue)
                let file = try writeJSON(directory, "x509.json", Federation.certificate(standIn, audience: audience, configuration: configuration))
                let error = await tokenError(try resolve(file: file, environment: Self.environment(standIn)))
                #expect(error?.kind == .refused(status: 400))
                #expect(
                    error?.message.contains("invalid_grant") == true && error?.message.contains("trust anchor") == true, "\(error?.message ?? "")")
                #expect(try await standIn.log("sts").last?["mtls"] == true)
            }
        }
    }

    /// Without SSL_CERT_FILE the system's roots are used, which do not hold the stand-in's CA: no handshake.
    @Test func theSystemsRootsDoNotTrustTheStandInsServer() async throws {
        try await GoogleStandIn.with { standIn in
            let (audience, _) = Federation.pool(404, "x509")
            try await standIn.provider(audience)
            let configuration = try #require(try await standIn.x509Client("workload")["certificateConfigFile"]?.stringValue)
            try await TemporaryDirectory.with { directory in
                let file = try writeJSON(directory, "x509.json", Federation.certificate(standIn, audience: audience, configuration: configuration))
                let error = await tokenError(try resolve(file: file, endpoints: GoogleEndpoints(fetchTimeout: .seconds(3))))
                #expect(error?.kind == .unreachable || error?.kind == .timeout, "\(error?.message ?? "")")
                #expect(try await standIn.calls(kind: "sts") == 0)
            }
        }
    }

    /// use_default_certificate_config finds the file GOOGLE_API_CERTIFICATE_CONFIG names.
    @Test func theDefaultCertificateConfigurationComesFromTheEnvironment() async throws {
        try await GoogleStandIn.with { standIn in
            let configuration = try #require(try await standIn.x509Client("workload")["certificateConfigFile"]?.stringValue)
            try await TemporaryDirectory.with { directory in
                var object = Federation.certificate(standIn, audience: Fixture.audience, configuration: configuration)
                object["credential_source"] = .object(["certificate": .object(["use_default_certificate_config": true])])
                let file = try writeJSON(directory, "x509.json", object)
                var environment = Self.environment(standIn)
                environment["GOOGLE_API_CERTIFICATE_CONFIG"] = configuration
                #expect(try resolve(file: file, environment: environment).summary.contains("(GOOGLE_API_CERTIFICATE_CONFIG)"))
                // Else gcloud's directory, where there is none.
                let error = configurationError(file)
                #expect(error?.message.contains("/nonexistent-home/.config/gcloud/certificate_config.json") == true, "\(error?.message ?? "")")
            }
        }
    }

    @Test func malformedCertificateSourcesAreLocatedConfigurationErrors() async throws {
        try await GoogleStandIn.with { standIn in
            let workload = try await standIn.x509Client("workload")
            let other = try await standIn.x509Client("other", spec: #"{"name": "other"}"#)
            try await TemporaryDirectory.with { directory in
                let certificate = try #require(workload["certFile"]?.stringValue)
                let key = try #require(workload["keyFile"]?.stringValue)
                func configuration(_ name: String, _ workload: JSONObject?) throws -> JSONValue {
                    let configs: JSONObject = workload.map { ["workload": .object($0)] } ?? [:]
                    return .string(try writeJSON(directory, name, ["cert_configs": .object(configs)]))
                }
                let garbage = try directory.write("bad.pem", "not a certificate")
                let leafBelow =
                    try String(contentsOfFile: try #require(other["certFile"]?.stringValue), encoding: .utf8)
                    + String(contentsOfFile: certificate, encoding: .utf8)
                let cases: [(String, JSONObject, String)] = [
                    ("both", ["certificate_config_location": "/x.json", "use_default_certificate_config": true], "set one only"),
                    (
                        "neither", ["use_default_certificate_config": false],
                        "\"credential_source.certificate.certificate_config_location\" is missing"
                    ),
                    ("no workload", ["certificate_config_location": try configuration("c1.json", nil)], "\"cert_configs.workload\" is missing"),
                    (
                        "no key path", ["certificate_config_location": try configuration("c2.json", ["cert_path": .string(certificate)])],
                        "\"cert_configs.workload.key_path\" is missing"
                    ),
                    (
                        "garbage certificate",
                        ["certificate_config_location": try configuration("c3.json", ["cert_path": .string(garbage), "key_path": .string(key)])],
                        "holds no readable PEM certificate"
                    ),
                    (
                        "another's key",
                        [
                            "certificate_config_location": try configuration(
                                "c4.json", ["cert_path": .string(certificate), "key_path": other["keyFile"] ?? .null])
                        ],
                        "are not a pair"
                    ),
                    (
                        "leaf low in the chain",
                        [
                            "certificate_config_location": workload["certificateConfigFile"] ?? .null,
                            "trust_chain_path": .string(try directory.write("chain.pem", leafBelow)),
                        ],
                        "holds the leaf certificate below the top"
                    ),
                ]
                for (name, source, expected) in cases {
                    let object = ConfigurationTests.external.with("credential_source", .object(["certificate": .object(source)]))
                    let path = try writeJSON(directory, "\(name).json", object)
                    let error = configurationError(path, environment: Self.environment(standIn))
                    #expect(error?.message.contains(expected) == true, "\(name): \(error?.message ?? "")")
                }
            }
        }
    }
}
