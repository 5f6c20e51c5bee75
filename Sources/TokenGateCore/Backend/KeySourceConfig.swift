import JOSE

/// The `verify:` list of a backend that does not sign its own tokens: where the public keys come from.
///
/// ```yaml
/// verify:
///   - jwksFile: keys/acme-jwks.json                       # a JWKS file
///     serviceAccount: signer@acme.iam.gserviceaccount.com  # optional: every key's tokens must have this iss
///   - keyFile: keys/consumer-sa.pem                       # a PEM public key or X.509 certificate ...
///     keyId: 3f1c…                                        # ... with its kid (required)
///     serviceAccount: consumer@acme.iam.gserviceaccount.com
///   - jwksUrl: https://keys.acme.example/jwks.json        # fetched at run time, where the backend supports it
///     refreshInterval: 1h
/// ```
public struct KeySourceConfig: Sendable {
    /// A JWKS to fetch over HTTP(S), with the node that named it for errors.
    public struct RemoteJWKS: Sendable {
        /// The URL as configured.
        public var url: String
        /// How long a fetched set is used before it is fetched again.
        public var refreshInterval: Duration
        /// The service account every key of the set is bound to, if any.
        public var serviceAccount: String?
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
            let mapping = try entry.mapping(allowedKeys: ["jwksFile", "keyFile", "keyId", "jwksUrl", "refreshInterval", "serviceAccount"])
            let serviceAccount = try mapping.optional("serviceAccount")?.nonEmptyString()
            let sources = ["jwksFile", "keyFile", "jwksUrl"].filter { mapping.optional($0) != nil }
            guard sources.count == 1 else { throw entry.error("give exactly one of jwksFile, keyFile, jwksUrl") }
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
                if let serviceAccount { issuers[keyID] = serviceAccount }
            }
            keys += loaded
        }
        let set: JWKSet
        do { set = try JWKSet(keys: keys) } catch { throw node.error("the keys do not form a valid key set: \(error)") }
        return KeySourceConfig(fileKeys: VerificationKeys(keySet: set, issuers: issuers), remote: remote)
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
