import Foundation
import JOSE
package import TokenGateCore

/// Builds `static-key` backends. Every key is loaded and checked here, once, at load time.
///
/// ```yaml
/// backend:
///   type: static-key
///   tokenLifetime: 1h            # 1m to 1h (default 1h); or per type: { default: 1h, consumer: 15m }
///   wholeFleetTokenLifetime: 10m # fleet-reader, delivery-fleet-reader, server (default 10m, at most tokenLifetime)
///   keys:                        # per token type, a list of keys; the first one signs, all are published
///     consumer:
///       - serviceAccountFile: keys/consumer-sa.json     # a Google service-account JSON key file
///         expires: 2027-01-15                           # optional: when Google stops accepting it (key health)
///     driver:
///       - privateKeyFile: keys/driver.pem               # or: an RSA private key in PEM ...
///         keyId: 5f3c…                                  # ... its kid (the service account's private_key_id)
///         clientEmail: driver@acme.iam.gserviceaccount.com
///       - serviceAccountFile: state/demo.json
///         generateIfMissing: true                       # demo only: create a fresh key file (mode 0600)
///   allowInsecureKeyFilePermissions: false   # true: accept key files others may read (warned); never do this
/// ```
///
/// A key file that anyone but its owner may read or write is refused, as ssh refuses such a key: `chmod 600` it.
package struct StaticKeySignerFactory: TokenBackendFactory {
    package let type = "static-key"

    /// Creates the factory.
    package init() {}

    package func makeBackend(_ context: BackendContext) async throws -> any TokenBackend {
        let section = try context.section.mapping(allowedKeys: TokenLifetimes.keys.union(["type", "keys", "allowInsecureKeyFilePermissions"]))
        let allowInsecure = try section.optional("allowInsecureKeyFilePermissions")?.bool() ?? false
        var identities: [TokenType: StaticKeySigner.SigningIdentity] = [:]
        var published = KeyCollector()
        let keysNode = try section.required("keys")
        for (typeName, listNode) in try keysNode.entries() {
            guard let type = TokenType(rawValue: typeName) else {
                throw listNode.keyError("unknown token type; expected one of: \(TokenType.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            let entries = try listNode.sequence()
            guard !entries.isEmpty else { throw listNode.error("list at least one key") }
            for (index, entry) in entries.enumerated() {
                let identity = try loadIdentity(entry, type: type, provider: context.provider, allowInsecure: allowInsecure)
                try published.add(identity, at: entry)
                if index == 0 { identities[type] = identity }
            }
        }
        guard !identities.isEmpty else { throw keysNode.error("configure a key for at least one token type") }
        return StaticKeySigner(
            identities: identities,
            verificationKeys: try published.verificationKeys(at: keysNode),
            audience: context.audience,
            lifetimes: try TokenLifetimes.parse(section, issuing: Set(identities.keys)),
            clock: context.clock
        )
    }

    private func loadIdentity(
        _ node: ConfigNode, type: TokenType, provider: ProviderID, allowInsecure: Bool
    ) throws -> StaticKeySigner.SigningIdentity {
        let entry = try node.mapping(allowedKeys: [
            "serviceAccountFile", "generateIfMissing", "privateKeyFile", "keyId", "clientEmail", "expires",
        ])
        let expiresAt = try entry.optional("expires")?.date()
        if let fileNode = entry.optional("serviceAccountFile") {
            for key in ["privateKeyFile", "keyId", "clientEmail"] {
                if let other = entry.optional(key) { throw other.error("not allowed beside serviceAccountFile") }
            }
            let generate = try entry.optional("generateIfMissing")?.bool() ?? false
            let account = try ServiceAccountKeyFile.load(fileNode, generateIfMissing: generate, type: type, provider: provider)
            try checkPermissions(of: fileNode, allowInsecure: allowInsecure)
            return try identity(key: account.key, serviceAccount: account.clientEmail, expiresAt: expiresAt, at: fileNode)
        }
        let fileNode = try entry.required("privateKeyFile")
        let keyID = try entry.required("keyId").nonEmptyString()
        let email = try entry.required("clientEmail").nonEmptyString()
        try checkPermissions(of: fileNode, allowInsecure: allowInsecure)
        let key: JWSKey
        do {
            key = try JWSKey.pem(String(decoding: try fileNode.fileContents(), as: UTF8.self), algorithm: .rs256, keyID: keyID)
        } catch let error as ConfigError {
            throw error
        } catch {
            throw fileNode.error("not a usable RS256 private key: \(error)")
        }
        return try identity(key: key, serviceAccount: email, expiresAt: expiresAt, at: fileNode)
    }

    private func checkPermissions(of node: ConfigNode, allowInsecure: Bool) throws {
        guard let problem = try node.privateKeyFilePermissionProblem() else { return }
        guard allowInsecure else { throw node.error(problem + " (or set allowInsecureKeyFilePermissions: true)") }
        node.warn(problem)
    }

    private func identity(
        key: JWSKey, serviceAccount: String, expiresAt: Int64?, at node: ConfigNode
    ) throws -> StaticKeySigner.SigningIdentity {
        guard key.algorithm == .rs256 else { throw node.error("Fleet Engine tokens are RS256; this key is \(key.summary)") }
        do {
            return StaticKeySigner.SigningIdentity(signer: try JWSSigner(key: key), serviceAccount: serviceAccount, expiresAt: expiresAt)
        } catch {
            throw node.error("cannot sign with this key: \(error)")
        }
    }
}

/// Gathers every configured key's public half once, even when one key serves several token types.
private struct KeyCollector {
    private var keys: [String: (key: JWSKey, publicJWK: [UInt8], issuer: String)] = [:]
    private var order: [String] = []

    mutating func add(_ identity: StaticKeySigner.SigningIdentity, at node: ConfigNode) throws {
        let key = identity.signer.key
        guard let keyID = key.keyID else { throw node.error("the key has no kid") }
        let jwk = try key.publicJWK()
        if let existing = keys[keyID] {
            guard existing.publicJWK == jwk, existing.issuer == identity.serviceAccount else {
                throw node.error("kid '\(keyID)' is already used by a different key or service account")
            }
            return
        }
        keys[keyID] = (key.publicKey(), jwk, identity.serviceAccount)
        order.append(keyID)
    }

    func verificationKeys(at node: ConfigNode) throws -> [BoundKeySource] {
        do {
            return try order.map { keyID in
                let entry = keys[keyID]!
                return BoundKeySource(.fixed(try JWKSet(keys: [entry.key])), serviceAccount: entry.issuer)
            }
        } catch {
            throw node.error("the keys do not form a valid key set: \(error)")
        }
    }
}
