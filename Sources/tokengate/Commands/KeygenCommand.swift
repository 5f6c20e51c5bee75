import ArgumentParser
import Foundation
import JOSE
import TokenGateCore

/// `tokengate keygen`: a new signing key and its public JWK, without an OpenSSL manual.
struct KeygenCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "keygen",
        abstract: "Generate a private key (PEM, mode 0600) and its public JWK.",
        discussion: "Writes DIR/KID.pem and DIR/KID.jwk.json. RS256 keys are RSA 2048, as Fleet Engine's service accounts use."
    )

    @Option(name: .long, help: "RS256, ES256 or EdDSA.")
    var alg: String = "RS256"
    @Option(name: .long, help: "The directory to write to (created if missing).")
    var out: String
    @Option(name: .long, help: "The key ID; default: 40 random hex digits, like a service account's private_key_id.")
    var kid: String?

    func run() throws {
        guard let algorithm = JWSAlgorithm(rawValue: alg), [.rs256, .es256, .edDSA].contains(algorithm) else {
            throw CLIFailure(.usage, "--alg must be RS256, ES256 or EdDSA")
        }
        let keyID = try kid ?? HexBytes.encode(SecureRandom.bytes(count: 20))
        guard !keyID.isEmpty, keyID.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-_.".contains($0)) }) else {
            throw CLIFailure(.usage, "--kid may hold only letters, digits, '-', '_' and '.'")
        }
        let key = try JWSKey.generate(algorithm, keyID: keyID)
        let privatePath = "\(out)/\(keyID).pem", publicPath = "\(out)/\(keyID).jwk.json"
        do {
            try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
            try write(Data(try key.privateKeyPEM().utf8), to: privatePath, mode: 0o600)
            try write(Data(try key.publicJWK()) + Data("\n".utf8), to: publicPath, mode: 0o644)
        } catch let failure as CLIFailure {
            throw failure
        } catch {
            throw CLIFailure(.usage, "cannot write the key files: \(error)")
        }
        print("private key: \(privatePath) (\(key.summary), \(algorithm), mode 0600)")
        print("public JWK:  \(publicPath)")
        print("kid:         \(keyID)")
    }

    private func write(_ data: Data, to path: String, mode: Int) throws {
        guard !FileManager.default.fileExists(atPath: path) else { throw CLIFailure(.usage, "\(path) exists; not overwriting a key") }
        guard FileManager.default.createFile(atPath: path, contents: data, attributes: [.posixPermissions: mode]) else {
            throw CLIFailure(.usage, "cannot create \(path)")
        }
    }
}
