import ArgumentParser
import Foundation
import JOSE
import TokenGateCore

/// `tokengate mint-session`: a test session token for a `jwt` client, so the session path can be tried without an
/// identity provider.
struct MintSessionCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mint-session",
        abstract: "Mint a test session token for a jwt client (printed alone on standard output).",
        discussion: """
            Signs {iss, sub, aud, iat, exp, claims…} with a private key (PEM or JWK, e.g. keygen's DIR/KID.pem); the \
            jwt client verifies it with the public half (keygen's DIR/KID.jwks.json as its jwksFile). HMAC keys are \
            refused: session tokens are verified with public keys only.
            --claim NAME=VALUE adds a string claim; --claim-json NAME=JSON adds any JSON value, e.g. \
            --claim-json 'trip_ids=["trip-42"]'. Exit status: 0 success, 2 usage or key error.
            """
    )

    static let maximumLifetime: Int64 = 24 * 3600
    /// Set by their own options: a --claim cannot change what the gateway checks under another name.
    static let registeredClaims = [
        "iss": "--issuer", "sub": "--subject", "aud": "--audience", "iat": "--lifetime",
        "exp": "--lifetime", "nbf": "--lifetime",
    ]

    @Option(name: .long, help: "The private key: PEM (PKCS#8, PKCS#1, SEC1) or JWK; RS*, PS*, ES* or EdDSA.")
    var key: String
    @Option(name: .long, help: "Bind a key that names no alg (PEM, a JWK without \"alg\") to this algorithm.")
    var alg: String?
    @Option(name: .long, help: "The kid header; default: the key's own kid (a PEM has none: give keygen's KID).")
    var kid: String?
    @Option(name: .long, help: "The iss claim: the jwt client's issuer.")
    var issuer: String
    @Option(name: .long, help: "The aud claim (repeatable: several make an array).")
    var audience: [String] = []
    @Option(name: .long, help: "The sub claim.")
    var subject: String?
    @Option(name: .long, help: "A string claim NAME=VALUE (repeatable).")
    var claim: [String] = []
    @Option(name: .customLong("claim-json"), help: "A claim NAME=JSON with any JSON value (repeatable).")
    var claimJSON: [String] = []
    @Option(name: .long, help: "How long the token is valid, e.g. 90s, 30m, 1h; at most 24h.")
    var lifetime: String = "1h"

    func run() throws {
        let seconds = try lifetimeSeconds()
        guard !audience.isEmpty else { throw CLIFailure(.usage, "give --audience (the jwt client's audience)") }
        var claims = JSONObject()
        claims["iss"] = .string(issuer)
        if let subject { claims["sub"] = .string(subject) }
        claims["aud"] = audience.count == 1 ? .string(audience[0]) : .array(audience.map(JSONValue.string))
        let now = Int64(Date().timeIntervalSince1970)
        claims["iat"] = .integer(now)
        claims["exp"] = .integer(now + seconds)
        for (name, value) in try extraClaims() {
            guard claims[name] == nil else { throw CLIFailure(.usage, "claim '\(name)' is given twice") }
            claims[name] = value
        }
        let signingKey = try loadKey()
        var header = JSONObject()
        if let kid {
            guard !kid.isEmpty else { throw CLIFailure(.usage, "--kid must not be empty") }
            header["kid"] = .string(kid)
        }
        if header["kid"] == nil, signingKey.keyID == nil {
            // A verifier picks keys by kid and never lends a named key to a token without one (keygen's JWKS names
            // its key). Said on stderr: stdout stays the token alone.
            FileHandle.standardError.write(
                Data(
                    "tokengate: note: the token has no kid, so only a key without a kid verifies it; give --kid (keygen's KID)\n".utf8))
        }
        do {
            print(try JWSSigner(key: signingKey).sign(claims: claims, extraHeader: header))
        } catch {
            throw CLIFailure(.usage, "\(key): cannot sign: \(error)")
        }
    }

    private func lifetimeSeconds() throws(CLIFailure) -> Int64 {
        guard let duration = ConfigDuration.parse(lifetime) else {
            throw CLIFailure(.usage, "--lifetime '\(lifetime)' is not a duration such as 90s, 30m or 1h")
        }
        let seconds = ConfigDuration.seconds(duration)
        guard (1...Self.maximumLifetime).contains(seconds) else {
            throw CLIFailure(.usage, "--lifetime must be from 1s to 24h")
        }
        return seconds
    }

    /// `--claim` then `--claim-json`, in the order given; reserved or repeated names are refused.
    private func extraClaims() throws(CLIFailure) -> [(String, JSONValue)] {
        var result: [(String, JSONValue)] = []
        for (option, entries) in [("--claim", claim), ("--claim-json", claimJSON)] {
            for entry in entries {
                guard let equals = entry.firstIndex(of: "="), equals != entry.startIndex else {
                    throw CLIFailure(.usage, "\(option) '\(entry)' is not NAME=VALUE")
                }
                let name = String(entry[..<equals])
                let text = String(entry[entry.index(after: equals)...])
                if let owner = Self.registeredClaims[name] {
                    throw CLIFailure(.usage, "\(option) cannot set '\(name)': it comes from \(owner)")
                }
                guard option == "--claim-json" else {
                    result.append((name, .string(text)))
                    continue
                }
                do {
                    result.append((name, try JSON.parse(Array(text.utf8))))
                } catch {
                    throw CLIFailure(.usage, "--claim-json \(name): not JSON: \(error)")
                }
            }
        }
        return result
    }

    private func loadKey() throws(CLIFailure) -> JWSKey {
        var binding: JWSAlgorithm?
        if let alg {
            guard let algorithm = JWSAlgorithm(rawValue: alg) else { throw CLIFailure(.usage, "unknown --alg '\(alg)'") }
            guard !algorithm.isSymmetric else {
                throw CLIFailure(.usage, "--alg \(alg): session tokens are verified with public keys; HMAC is refused")
            }
            binding = algorithm
        }
        let keys: [JWSKey]
        do {
            keys = try KeyFile.load(contentsOf: key, algorithm: binding)
        } catch {
            throw CLIFailure(.usage, "\(key): \(error)")
        }
        guard keys.count == 1, let loaded = keys.first else {
            throw CLIFailure(.usage, "\(key): holds \(keys.count) keys; give a file with exactly one private key")
        }
        guard !loaded.isSymmetric else {
            throw CLIFailure(.usage, "\(key): an HMAC key; session tokens are verified with public keys, so HMAC is refused")
        }
        guard loaded.isPrivate else {
            throw CLIFailure(.usage, "\(key): a public key; mint-session signs, so it needs the private key (e.g. keygen's KID.pem)")
        }
        return loaded
    }
}
