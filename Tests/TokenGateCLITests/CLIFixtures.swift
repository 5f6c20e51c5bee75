import Foundation
import JOSE
import OpenSSLPrimitives
import Testing

/// Configuration files, keys and tokens the CLI tests feed to `tokengate`. Every key is generated here.
enum CLIFixtures {
    static let providerID = "acme-rides"
    static let audience = "https://fleetengine.googleapis.com/"

    /// A working static-key configuration whose consumer key `tokengate` generates on first load.
    ///
    /// The client's digest is of `apiKey`, which must never be printed back.
    static func staticKeyConfig(apiKey: String) throws -> String {
        """
        server:
          host: 127.0.0.1
          port: 8080
        providers:
          \(providerID):
            backend:
              type: static-key
              tokenLifetime: 1h
              keys:
                consumer:
                  - serviceAccountFile: state/consumer.json
                    generateIfMissing: true
            clients:
              - name: backend
                type: api-key
                keySha256: \(try hex(Digest.sha256(Array(apiKey.utf8))))
                allow: { consumer: any }
        """
    }

    /// Lower-case hex, as `keySha256` is written.
    static func hex(_ bytes: [UInt8]) -> String { HexBytes.encode(bytes) }

    /// The JSON output of `verify-token --json`, parsed.
    static func verdict(_ result: CLIResult, sourceLocation: SourceLocation = #_sourceLocation) throws -> JSONObject {
        let value = try JSON.parse(Array(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines).utf8))
        return try #require(value.objectValue, "verify-token --json printed no JSON object:\n\(result)", sourceLocation: sourceLocation)
    }
}

/// A signing key for hand-made tokens, its public files on disk, and claims to sign.
struct TokenKit: Sendable {
    /// The epoch second every hand-made token is judged at (`--now`).
    static let now: Int64 = 1_800_000_000
    static let keyID = "k1"
    static let issuer = "signer@acme-rides.iam.gserviceaccount.com"

    /// One RSA key for all hostile cases: generating 2048-bit keys per case would only slow the suite.
    static let shared: TokenKit = {
        do {
            return TokenKit(key: try JWSKey.generate(.rs256, keyID: keyID))
        } catch {
            preconditionFailure("cannot generate an RS256 test key: \(error)")
        }
    }()

    let key: JWSKey

    /// Claims of a token valid at `now` for trip t-1: 30 minutes long, issued a minute ago.
    static func claims() -> JSONObject {
        [
            "iss": .string(issuer), "sub": .string(issuer), "aud": .string(CLIFixtures.audience),
            "iat": .integer(now - 60), "exp": .integer(now + 1740),
            "authorization": .object(["tripid": "t-1"]),
        ]
    }

    /// `claims()` changed by `edit`, signed by the kit's key.
    func sign(_ edit: (inout JSONObject) -> Void = { _ in }) throws -> String {
        var claims = Self.claims()
        edit(&claims)
        return try JWSSigner(key: key).sign(claims: claims)
    }

    /// Exact header and payload bytes, signed by `key` (default: the kit's key).
    func sign(header: String, payload: String, with key: JWSKey? = nil) throws -> String {
        try JWSSigner(key: key ?? self.key).sign(headerJSON: Array(header.utf8), payload: Array(payload.utf8))
    }

    /// Writes the public key as a JWK (`key.jwk.json`) and as SPKI PEM (`key.pem`) into the runner's directory.
    func writePublicKeys(into cli: CLIRunner) throws {
        try cli.write("key.jwk.json", Data(try key.publicJWK()))
        try cli.write("key.pem", try key.publicKeyPEM())
    }

    /// The signature segment of `token`, decoded.
    static func signature(of token: String) throws -> [UInt8] {
        let segments = token.split(separator: ".", omittingEmptySubsequences: false)
        return try #require(Base64URL.decode(segments[2]))
    }

    /// `token` with its signature segment replaced by `signature`.
    static func replacingSignature(of token: String, with signature: [UInt8]) -> String {
        let segments = token.split(separator: ".", omittingEmptySubsequences: false)
        return "\(segments[0]).\(segments[1]).\(Base64URL.encode(signature))"
    }
}
