import Foundation
import JOSE
import TokenGateCore

/// Reads (and for demos, creates) Google service-account JSON key files named in configuration.
enum ServiceAccountKeyFile {
    static func load(_ node: ConfigNode, generateIfMissing: Bool, type: TokenType, provider: ProviderID) throws -> ServiceAccountKey {
        let path = try node.path()
        if generateIfMissing, !FileManager.default.fileExists(atPath: path) {
            try generate(at: path, node: node, type: type, provider: provider)
        }
        do {
            return try ServiceAccountKey(json: try node.fileContents())
        } catch let error as ConfigError {
            throw error
        } catch {
            throw node.error("not a usable service-account key file: \(error)")
        }
    }

    /// Writes a fresh key file readable by its owner only, atomically, in a directory only the owner can enter.
    private static func generate(at path: String, node: ConfigNode, type: TokenType, provider: ProviderID) throws {
        let email = "tokengate-\(type.rawValue)@\(provider).iam.gserviceaccount.com"
        do {
            let account = try ServiceAccountKey.generate(projectID: provider.rawValue, clientEmail: email)
            let directory = (path as NSString).deletingLastPathComponent
            if !directory.isEmpty {
                try FileManager.default.createDirectory(
                    atPath: directory,
                    withIntermediateDirectories: true,
                    attributes: [.posixPermissions: 0o700]
                )
            }
            let temporary = "\(path).\(UInt32.random(in: 0...UInt32.max)).tmp"
            guard FileManager.default.createFile(atPath: temporary, contents: Data(try account.json()), attributes: [.posixPermissions: 0o600])
            else { throw node.error("cannot write \(temporary)") }
            guard rename(temporary, path) == 0 else {
                try? FileManager.default.removeItem(atPath: temporary)
                throw node.error("cannot move the new key into place at \(path)")
            }
        } catch let error as ConfigError {
            throw error
        } catch {
            throw node.error("cannot generate a key file: \(error)")
        }
    }
}
