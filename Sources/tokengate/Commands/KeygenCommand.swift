import ArgumentParser
import Foundation
import JOSE
import OpenSSLPrimitives
import TokenGateCore

/// `tokengate keygen`: a new signing key in the files `config.yaml` reads, without an OpenSSL manual.
struct KeygenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keygen",
        abstract: "Generate a signing key: private PEM (0600), public JWKS, and optionally a service-account file.",
        discussion: """
            Writes DIR/KID.pem (the private key, mode 0600) and DIR/KID.jwks.json (its public JWKS, mode 0644, for \
            `jwksFile:`). With --service-account EMAIL (RS256 only) also DIR/KID.json, a Google service-account key \
            file (mode 0600) for a static-key backend's `serviceAccountFile:`. Never overwrites a file. RS256 keys \
            are RSA 2048, as Google's service-account keys are.
            """
    )

    @Option(name: .long, help: "RS256, ES256 or EdDSA.")
    var alg: String = "RS256"
    @Option(name: .long, help: "The directory to write to (created if missing).")
    var out: String
    @Option(name: .long, help: "The key ID; default: 40 random hex digits, like a service account's private_key_id.")
    var kid: String?
    @Option(name: .customLong("service-account"), help: "Also write DIR/KID.json for this service account's email.")
    var serviceAccount: String?
    @Option(name: .long, help: "The project_id of --service-account; default: from an EMAIL@PROJECT.iam.gserviceaccount.com address.")
    var project: String?

    func run() throws {
        guard let algorithm = JWSAlgorithm(rawValue: alg), [.rs256, .es256, .edDSA].contains(algorithm) else {
            throw CLIFailure(.usage, "--alg must be RS256, ES256 or EdDSA")
        }
        let account = try serviceAccountIdentity(for: algorithm)
        let keyID = try kid ?? HexBytes.encode(SecureRandom.bytes(count: 20))
        guard !keyID.isEmpty, keyID.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }) else {
            throw CLIFailure(.usage, "--kid may hold only letters, digits, '-', '_' and '.'")
        }
        let paths = KeyPaths(directory: out, keyID: keyID)
        // Before the key exists: a refusal costs nothing and writes nothing.
        try NewFiles.refuseExisting([paths.privateKey, paths.jwks] + (account == nil ? [] : [paths.serviceAccount]))
        var files = NewFiles()
        do {
            let key: JWSKey
            if let account {
                let generated = try ServiceAccountKey.generate(projectID: account.project, clientEmail: account.email, keyID: keyID)
                key = generated.key
                files.add(paths.serviceAccount, try generated.json() + [0x0A], mode: 0o600)
            } else {
                key = try JWSKey.generate(algorithm, keyID: keyID)
            }
            files.add(paths.privateKey, Array(try key.privateKeyPEM().utf8), mode: 0o600)
            files.add(paths.jwks, try JWKSet(keys: [key]).publicJSON() + [0x0A], mode: 0o644)
            try files.write(into: out)
            print(KeygenReport(paths: paths, key: key, account: account).text())
        } catch let failure as CLIFailure {
            throw failure
        } catch {
            throw CLIFailure(.usage, "cannot generate the key: \(error)")
        }
    }

    /// The validated `--service-account` and its project, or nil without one.
    private func serviceAccountIdentity(for algorithm: JWSAlgorithm) throws(CLIFailure) -> ServiceAccountIdentity? {
        guard let serviceAccount else {
            if project != nil { throw CLIFailure(.usage, "--project needs --service-account") }
            return nil
        }
        guard algorithm == .rs256 else {
            throw CLIFailure(.usage, "--service-account needs --alg RS256: Google service-account keys are RSA")
        }
        return try ServiceAccountIdentity(email: serviceAccount, project: project)
    }
}

/// The files `keygen` writes for one key ID.
struct KeyPaths {
    let privateKey: String, jwks: String, serviceAccount: String

    init(directory: String, keyID: String) {
        let base = directory.hasSuffix("/") ? "\(directory)\(keyID)" : "\(directory)/\(keyID)"
        privateKey = base + ".pem"
        jwks = base + ".jwks.json"
        serviceAccount = base + ".json"
    }
}
