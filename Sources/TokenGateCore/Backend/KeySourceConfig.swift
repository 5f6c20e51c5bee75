import JOSE

/// The `verify:` list of a backend that does not sign its own tokens: where the public keys come from.
///
/// ```yaml
/// verify:
///   - jwksFile: keys/acme-jwks.json                       # a JWKS file (or a single JWK)
///     serviceAccount: signer@acme.iam.gserviceaccount.com  # required: every key's tokens must have this iss
///   - keyFile: keys/consumer-sa.pem                       # a PEM public key or X.509 certificate ...
///     keyId: 3f1c…                                        # ... with its kid (required)
///     serviceAccount: consumer@acme.iam.gserviceaccount.com
///   - serviceAccountFile: keys/driver-sa.json             # a Google service-account key file: its public key,
///                                                         # kid (private_key_id) and iss (client_email)
///   - jwksUrl: https://keys.acme.example/jwks.json        # fetched at run time, where the backend supports it
///     serviceAccount: signer@acme.iam.gserviceaccount.com
///     refreshInterval: 1h
/// ```
///
/// Every key is bound to the one service account whose tokens it may sign: a key that verifies the signature of a
/// token whose `iss` is anyone else's is no proof of anything. The binding is `serviceAccount:`, required on every
/// entry but a service-account file, which names its own (`client_email`).
public struct KeySourceConfig: Sendable {
    /// A JWKS to fetch over HTTP(S), with the node that named it for errors.
    public struct RemoteJWKS: Sendable {
        /// The URL as configured.
        public var url: String
        /// How long a fetched set is used before it is fetched again.
        public var refreshInterval: Duration
        /// The service account every key of the set is bound to.
        public var serviceAccount: String
        /// Where it was configured.
        public var node: ConfigNode
    }

    /// Keys read from files at load time, with their issuer bindings.
    public var fileKeys: VerificationKeys
    /// Key sets to fetch at run time.
    public var remote: [RemoteJWKS]

    /// Parses a `verify:` list. `allowsURLs` is false for backends that never go to the network.
    public static func parse(_ node: ConfigNode, allowsURLs: Bool) throws -> KeySourceConfig {
        var keys: [JWSKey] = []
        var issuers: [String: String] = [:]
        var remote: [RemoteJWKS] = []
        let entries = try node.sequence()
        guard !entries.isEmpty else { throw node.error("list at least one key source") }
        for entry in entries {
            let mapping = try entry.mapping(allowedKeys: [
                "jwksFile", "keyFile", "keyId", "jwksUrl", "refreshInterval", "serviceAccount", "serviceAccountFile",
            ])
            let sources = ["jwksFile", "keyFile", "serviceAccountFile", "jwksUrl"].filter { mapping.optional($0) != nil }
            guard sources.count == 1 else { throw entry.error("give exactly one of jwksFile, keyFile, serviceAccountFile, jwksUrl") }
            if let fileNode = mapping.optional("serviceAccountFile") {
                let (key, issuer) = try loadServiceAccountKey(fileNode, mapping: mapping)
                guard let keyID = key.keyID else { throw entry.error("every verification key needs a kid") }
                issuers[keyID] = issuer
                keys.append(key)
                continue
            }
            guard let serviceAccount = try mapping.optional("serviceAccount")?.nonEmptyString() else {
                throw entry.error(
                    "missing required key 'serviceAccount': the email of the service account these keys sign for "
                        + "(every token's iss must be it); or give its serviceAccountFile instead"
                )
            }
            if let urlNode = mapping.optional("jwksUrl") {
                guard allowsURLs else { throw urlNode.error("this backend reads keys from files only") }
                let url = try urlNode.nonEmptyString()
                guard url.hasPrefix("https://") || url.hasPrefix("http://") else { throw urlNode.error("expected an http(s) URL") }
                let refresh = try mapping.optional("refreshInterval")?.duration() ?? .seconds(3600)
                remote.append(RemoteJWKS(url: url, refreshInterval: refresh, serviceAccount: serviceAccount, node: urlNode))
                continue
            }
            let loaded = try loadFileKeys(mapping)
            for key in loaded {
                guard let keyID = key.keyID else { throw entry.error("every verification key needs a kid") }
                issuers[keyID] = serviceAccount
            }
            keys += loaded
        }
        let set: JWKSet
        do { set = try JWKSet(keys: keys) } catch { throw node.error("the keys do not form a valid key set: \(error)") }
        return KeySourceConfig(fileKeys: VerificationKeys(keySet: set, issuers: issuers), remote: remote)
    }

    /// The public half of a Google service-account key file, bound to its `client_email`. A `serviceAccount:` beside
    /// it must name the same account.
    private static func loadServiceAccountKey(_ fileNode: ConfigNode, mapping: ConfigMapping) throws -> (JWSKey, String) {
        if let keyID = mapping.optional("keyId") { throw keyID.error("a service-account file names its own kid (private_key_id)") }
        let account: ServiceAccountKey
        do { account = try ServiceAccountKey(json: try fileNode.fileContents()) } catch let error as ConfigError {
            throw error
        } catch {
            throw fileNode.error("not a usable service-account key file: \(error)")
        }
        if let node = mapping.optional("serviceAccount"), try node.nonEmptyString() != account.clientEmail {
            throw node.error("the service-account file is for \(account.clientEmail)")
        }
        return (account.key.publicKey(), account.clientEmail)
    }

    private static func loadFileKeys(_ mapping: ConfigMapping) throws -> [JWSKey] {
        if let fileNode = mapping.optional("jwksFile") {
            if let keyID = mapping.optional("keyId") { throw keyID.error("a JWKS names its own kids") }
            do { return try JWKSet(json: try fileNode.fileContents()).keys.map { $0.publicKey() } } catch let error as ConfigError {
                throw error
            } catch {
                throw fileNode.error("not a usable JWKS: \(error)")
            }
        }
        let fileNode = try mapping.required("keyFile")
        let keyID = try mapping.required("keyId").nonEmptyString()
        do {
            let text = String(decoding: try fileNode.fileContents(), as: UTF8.self)
            return [try JWSKey.pem(text, algorithm: .rs256, keyID: keyID).publicKey()]
        } catch let error as ConfigError {
            throw error
        } catch {
            throw fileNode.error("not a usable RS256 public key or certificate: \(error)")
        }
    }
}
