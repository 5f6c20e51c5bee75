import Foundation
import JOSE
import Testing

/// `verify-token --key`: every hostile token exits 1 with its stable reason; the honest ones exit 0.
@Suite struct HostileTokenCLITests {
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        /// Options after `--key key.jwk.json --now T`.
        var options: [String] = []
        /// The key file given to `--key`.
        var keyFile = "key.jwk.json"
        /// nil: the token is valid.
        let reason: String?
        let token: @Sendable (TokenKit) throws -> String
        var testDescription: String { "\(name) → \(reason ?? "valid")" }
    }

    static let header = #"{"alg":"RS256","typ":"JWT","kid":"k1"}"#
    static let unkeyedHeader = #"{"alg":"RS256","typ":"JWT"}"#
    static let payload = String(decoding: JSON.serialize(.object(TokenKit.claims())), as: UTF8.self)

    static let cases: [Case] = [
        Case(name: "an honest token", reason: nil) { try $0.sign() },
        // A PEM carries no kid, so a token for it must carry none either (an unknown kid is never defaulted).
        Case(name: "an honest token without kid, key as PEM", keyFile: "key.pem", reason: nil) { kit in
            try kit.sign(header: unkeyedHeader, payload: payload)
        },
        Case(name: "an honest token with kid, key as PEM", keyFile: "key.pem", reason: "unknown_kid") { try $0.sign() },
        Case(name: "alg none", reason: "alg_not_allowed") { _ in
            Base64URL.encode(Array(#"{"alg":"none","typ":"JWT"}"#.utf8)) + "." + Base64URL.encode(Array(payload.utf8)) + "."
        },
        Case(name: "HS256 keyed with the RSA public key PEM", keyFile: "key.pem", reason: "key_alg_mismatch") { kit in
            let hmac = try JWSKey.hmac(secret: Array(try kit.key.publicKeyPEM().utf8), algorithm: .hs256)
            return try kit.sign(header: #"{"alg":"HS256","typ":"JWT"}"#, payload: payload, with: hmac)
        },
        Case(name: "HS256 keyed with the RSA public key PEM, kid of the JWK", reason: "key_alg_mismatch") { kit in
            let hmac = try JWSKey.hmac(secret: Array(try kit.key.publicKeyPEM().utf8), algorithm: .hs256)
            return try kit.sign(header: #"{"alg":"HS256","typ":"JWT","kid":"k1"}"#, payload: payload, with: hmac)
        },
        Case(name: "padded base64url", reason: "malformed") { kit in
            let token = try kit.sign()
            // A 256-byte signature is 342 base64url characters: standard base64 would pad it with "==".
            return token + "=="
        },
        Case(name: "four segments", reason: "malformed") { try $0.sign() + ".e30" },
        Case(name: "five segments (JWE)", reason: "jwe_not_supported") { try $0.sign() + ".e30.e30" },
        Case(name: "over 16 KiB", reason: "token_too_large") { kit in
            try kit.sign { $0["padding"] = .string(String(repeating: "x", count: 17 * 1024)) }
        },
        Case(name: "an unknown kid", reason: "unknown_kid") { kit in
            try kit.sign(header: #"{"alg":"RS256","typ":"JWT","kid":"k2"}"#, payload: payload)
        },
        Case(name: "expired", reason: "expired") { kit in
            try kit.sign {
                $0["iat"] = .integer(TokenKit.now - 3600)
                $0["exp"] = .integer(TokenKit.now - 61)
            }
        },
        Case(name: "nbf ahead", reason: "not_yet_valid") { kit in
            try kit.sign { $0["nbf"] = .integer(TokenKit.now + 120) }
        },
        Case(name: "iat ahead", reason: "issued_in_future") { kit in
            try kit.sign { $0["iat"] = .integer(TokenKit.now + 120) }
        },
        Case(name: "wrong aud", options: ["--audience", "https://other.example/"], reason: "wrong_audience") { try $0.sign() },
        Case(name: "the right aud", options: ["--audience", "https://other.example/", "--audience", CLIFixtures.audience], reason: nil) {
            try $0.sign()
        },
        Case(name: "wrong iss", options: ["--issuer", "other@acme-rides.iam.gserviceaccount.com"], reason: "wrong_issuer") {
            try $0.sign()
        },
        Case(name: "the right iss", options: ["--issuer", TokenKit.issuer], reason: nil) { try $0.sign() },
        Case(name: "lifetime over --max-lifetime", options: ["--max-lifetime", "3600"], reason: "lifetime_too_long") { kit in
            try kit.sign { $0["exp"] = .integer(TokenKit.now + 7200) }
        },
        Case(name: "a tampered signature byte", reason: "bad_signature") { kit in
            let token = try kit.sign()
            var signature = try TokenKit.signature(of: token)
            signature[100] ^= 0x01
            return TokenKit.replacingSignature(of: token, with: signature)
        },
        Case(name: "a tampered payload", reason: "bad_signature") { kit in
            let token = try kit.sign()
            let segments = token.split(separator: ".")
            let forged = Base64URL.encode(Array(payload.replacingOccurrences(of: "t-1", with: "t-2").utf8))
            return "\(segments[0]).\(forged).\(segments[2])"
        },
        Case(name: "a crit header", reason: "unsupported_crit") { kit in
            try kit.sign(header: #"{"alg":"RS256","kid":"k1","crit":["exp"],"exp":1}"#, payload: payload)
        },
        Case(name: "an algorithm outside --alg", options: ["--alg", "ES256"], reason: "alg_not_allowed") { try $0.sign() },
        Case(name: "no kid under --require-kid", options: ["--require-kid"], reason: "missing_kid") { kit in
            try kit.sign(header: unkeyedHeader, payload: payload)
        },
        Case(name: "no exp", reason: "missing_claim") { kit in try kit.sign { $0["exp"] = nil } },
        Case(name: "no exp under --no-require-exp", options: ["--no-require-exp"], reason: nil) { kit in
            try kit.sign { $0["exp"] = nil }
        },
        Case(name: "a non-JSON payload", reason: "malformed") { kit in
            try kit.sign(header: header, payload: "not json at all")
        },
        Case(name: "a non-JSON payload under --signature-only", options: ["--signature-only"], reason: nil) { kit in
            try kit.sign(header: header, payload: "not json at all")
        },
        Case(name: "a tampered signature under --signature-only", options: ["--signature-only"], reason: "bad_signature") { kit in
            let token = try kit.sign(header: header, payload: "not json at all")
            var signature = try TokenKit.signature(of: token)
            signature[0] ^= 0x80
            return TokenKit.replacingSignature(of: token, with: signature)
        },
    ]

    @Test(arguments: cases)
    func verifyTokenWithAKeyFileGivesEachTokenItsVerdict(_ testCase: Case) async throws {
        try await withCLI { cli in
            let kit = TokenKit.shared
            try kit.writePublicKeys(into: cli)
            let token = try testCase.token(kit)
            let arguments = ["verify-token", token, "--key", testCase.keyFile, "--now", "\(TokenKit.now)"] + testCase.options
            let json = try await cli.run(arguments + ["--json"])
            let verdict = try CLIFixtures.verdict(json)
            if let reason = testCase.reason {
                #expect(json.status == 1, "\(json)")
                #expect(verdict["valid"] == false)
                #expect(verdict["reason"] == .string(reason), "\(json)")
                #expect(json.stderr.contains("token rejected: \(reason)"), "\(json)")
            } else {
                #expect(json.status == 0, "\(json)")
                #expect(verdict["valid"] == true, "\(json)")
            }
        }
    }

    @Test(arguments: [("expired", "expired"), ("bad signature", "bad_signature")])
    func verifyTokenPrintsTheReasonCodeInTextToo(_ name: String, _ reason: String) async throws {
        try await withCLI { cli in
            let kit = TokenKit.shared
            try kit.writePublicKeys(into: cli)
            let testCase = try #require(Self.cases.first { $0.reason == reason })
            let result = try await cli.run(["verify-token", try testCase.token(kit), "--key", "key.jwk.json", "--now", "\(TokenKit.now)"])
            #expect(result.status == 1, "\(result)")
            #expect(result.stdout.contains("verdict: invalid (\(reason)): "), "\(result)")
        }
    }
}
