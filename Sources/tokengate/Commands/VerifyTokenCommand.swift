import ArgumentParser
import Foundation
import JOSE
import TokenGateCore

/// `tokengate verify-token`: checks a token as the gateway would, or against keys given on the command line.
struct VerifyTokenCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify-token",
        abstract: "Verify a JWT and show its header, claims, time left and verdict.",
        discussion: """
            With --config and --provider, the token is checked exactly as the gateway checks a token before \
            handing it out (add --type and an ID option to check its scope too). Otherwise give --key.
            Exit status: 0 valid, 1 invalid (the reason code is printed), 2 usage or configuration error.
            """
    )

    @Argument(help: "The token, or '-' (the default) to read it from standard input.")
    var token: String = "-"

    @OptionGroup var configuration: ConfigurationOptions
    @Option(name: .long, help: "Verify as this provider of --config does before handing tokens out.")
    var provider: String?
    @OptionGroup var context: ContextOptions

    @Option(name: .long, help: "A key file: PEM, certificate, JWK, JWKS or service-account JSON (repeatable).")
    var key: [String] = []
    @Option(
        name: .long,
        help:
            "An allowed algorithm (repeatable); default: what the keys are bound to. With exactly one, keys that name no alg (PEM, a JWK without \"alg\") are bound to it."
    )
    var alg: [String] = []
    @Option(name: .long, help: "The required iss.")
    var issuer: String?
    @Option(name: .long, help: "An accepted aud (repeatable; any of them).")
    var audience: [String] = []
    @Option(name: .long, help: "Clock skew tolerated, seconds.")
    var leeway: Int64 = 60
    @Flag(name: .long, help: "Require a kid header.")
    var requireKid = false
    @Option(name: .long, help: "The longest exp - iat accepted, seconds.")
    var maxLifetime: Int64?
    @Flag(name: .long, help: "Accept a token without exp.")
    var noRequireExp = false
    @Option(name: .long, help: "Judge the token at this time (epoch seconds) instead of now.")
    var now: Int64?
    @Flag(name: .long, help: "Check the header and signature only; the payload may be any bytes.")
    var signatureOnly = false
    @Flag(name: .long, help: "Print one JSON object instead of text.")
    var json = false

    func run() async throws {
        let compact = try readToken()
        let now = self.now ?? Int64(Date().timeIntervalSince1970)
        let outcome: Result<VerifiedJWT, TokenRejection>
        if let provider {
            outcome = try await verifyAsGateway(compact, providerID: provider, now: now)
        } else {
            outcome = try verifyWithKeys(compact, now: now)
        }
        let report = try TokenReport(token: compact, outcome: outcome, now: now)
        print(json ? report.json() : report.text())
        if case .failure = outcome { throw CLIFailure(.invalidToken, "token rejected: \(report.reasonCode)") }
    }

    private func readToken() throws(CLIFailure) -> String {
        guard token == "-" else {
            // A token given as an argument is judged whatever it holds: an empty one is malformed (exit 1).
            return token.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        let text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
            .trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { throw CLIFailure(.usage, "no token given (pass it as an argument or on standard input)") }
        return text
    }

    private func verifyAsGateway(_ compact: String, providerID: String, now: Int64) async throws -> Result<VerifiedJWT, TokenRejection> {
        guard key.isEmpty else { throw CLIFailure(.usage, "--key cannot be combined with --provider: the provider's keys are used") }
        // Arguments first: a usage error must not leave generated key files behind.
        let requested = context.isEmpty ? nil : try context.context()
        let verifier = try await configuration.withAssembler(logger: ConfigurationOptions.logger()) { assembler in
            let generation = try await configuration.assemble(assembler, only: providerID)
            guard let runtime = generation.providers.values.first else { throw CLIFailure(.usage, "no provider '\(providerID)'") }
            // The command line runs no refreshers: fetch the provider's JWKS URLs once, here.
            await runtime.fetchMissingKeys()
            do {
                return try runtime.verifier()
            } catch {
                throw CLIFailure(.usage, "cannot get the verification keys of provider '\(providerID)': \(error)")
            }
        }
        return Result { () throws(TokenRejection) in
            // Without a requested context, the token's own claim names it; its shape is still checked.
            let scope: TokenContext
            if let requested { scope = requested } else { scope = try TokenScope.context(ofUnverified: compact) }
            return try verifier.verify(compact, for: scope, now: now)
        }
    }

    private func verifyWithKeys(_ compact: String, now: Int64) throws -> Result<VerifiedJWT, TokenRejection> {
        guard !key.isEmpty else { throw CLIFailure(.usage, "give --key FILE (repeatable), or --config and --provider") }
        guard context.isEmpty else { throw CLIFailure(.usage, "--type and the ID options need --provider") }
        let algorithms = try alg.map { name throws(CLIFailure) in
            guard let algorithm = JWSAlgorithm(rawValue: name) else { throw CLIFailure(.usage, "unknown --alg '\(name)'") }
            return algorithm
        }
        // One --alg binds the keys that do not name their own; a key that does keeps it, so a key bound to another
        // algorithm still fails the token (key_alg_mismatch or alg_not_allowed, exit 1).
        let binding = algorithms.count == 1 ? algorithms[0] : nil
        var keys: [JWSKey] = []
        for path in key {
            do {
                keys += try KeyFile.load(contentsOf: path, algorithm: binding)
            } catch {
                throw CLIFailure(.usage, "\(path): \(error)")
            }
        }
        let keySet: JWKSet
        do { keySet = try JWKSet(keys: keys) } catch { throw CLIFailure(.usage, "the keys do not form a valid set: \(error)") }
        var policy = ValidationPolicy()
        if !algorithms.isEmpty { policy.allowedAlgorithms = Set(algorithms) }
        policy.issuer = issuer
        policy.audiences = audience
        policy.leeway = leeway
        policy.requireKeyID = requireKid
        policy.maxLifetime = maxLifetime
        policy.requireExpiration = !noRequireExp
        policy.signatureOnly = signatureOnly
        let verifier = JWTVerifier(keys: keySet)
        return Result { () throws(TokenRejection) in
            do throws(JWTValidationError) {
                return try verifier.verify(compact, policy: policy, now: now)
            } catch {
                throw TokenRejection(error)
            }
        }
    }
}
