import JOSE

extension BoundKeySource {
    /// Parses the `verify:` list of a backend that does not sign its own tokens: where the public keys come from,
    /// each entry bound to the service account it signs for.
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
    ///   - jwksUrl: https://keys.acme.example/jwks.json        # fetched at run time, where the backend allows URLs
    ///     serviceAccount: signer@acme.iam.gserviceaccount.com
    ///     refreshInterval: 1h
    /// ```
    ///
    /// Every key is bound to the one service account whose tokens it may sign: a key that verifies the signature of
    /// a token whose `iss` is anyone else's is no proof of anything. The binding is `serviceAccount:`, required on
    /// every entry but a service-account file, which names its own (`client_email`). `allowsURLs` is false for
    /// backends that never go to the network.
    public static func parseList(_ node: ConfigNode, allowsURLs: Bool) throws -> [BoundKeySource] {
        let entries = try node.sequence()
        guard !entries.isEmpty else { throw node.error("list at least one key source") }
        return try entries.map { try parse($0, allowsURLs: allowsURLs) }
    }

    private static func parse(_ entry: ConfigNode, allowsURLs: Bool) throws -> BoundKeySource {
        let mapping = try entry.mapping(allowedKeys: [
            "jwksFile", "keyFile", "keyId", "jwksUrl", "refreshInterval", "serviceAccount", "serviceAccountFile",
        ])
        let sources = ["jwksFile", "keyFile", "serviceAccountFile", "jwksUrl"].filter { mapping.optional($0) != nil }
        guard sources.count == 1 else { throw entry.error("give exactly one of jwksFile, keyFile, serviceAccountFile, jwksUrl") }
        if let node = mapping.optional("refreshInterval"), mapping.optional("jwksUrl") == nil {
            throw node.keyError("only for a jwksUrl: a file is read once, when the configuration loads")
        }
        if let node = mapping.optional("keyId"), mapping.optional("keyFile") == nil {
            throw node.keyError("only for a keyFile: a JWKS or service-account file names its own kids")
        }
        if let fileNode = mapping.optional("serviceAccountFile") {
            return try loadServiceAccountKey(fileNode, mapping: mapping)
        }
        guard let serviceAccount = try mapping.optional("serviceAccount")?.nonEmptyString() else {
            throw entry.error(
                "missing required key 'serviceAccount': the email of the service account these keys sign for "
                    + "(every token's iss must be it); or give its serviceAccountFile instead"
            )
        }
        if let urlNode = mapping.optional("jwksUrl") {
            guard allowsURLs else { throw urlNode.error("this backend reads keys from files only") }
            let url = try JWKSURL.parse(urlNode, refreshInterval: mapping.optional("refreshInterval"))
            return BoundKeySource(.url(url), serviceAccount: serviceAccount)
        }
        let keys = try loadFileKeys(mapping)
        guard keys.allSatisfy({ $0.keyID != nil }) else { throw entry.error("every verification key needs a kid") }
        do {
            return BoundKeySource(.fixed(try JWKSet(keys: keys)), serviceAccount: serviceAccount)
        } catch {
            throw entry.error("the keys do not form a valid key set: \(error)")
        }
    }

    /// The public half of a Google service-account key file, bound to its `client_email`. A `serviceAccount:`
    /// beside it must name the same account.
    private static func loadServiceAccountKey(_ fileNode: ConfigNode, mapping: ConfigMapping) throws -> BoundKeySource {
        let account: ServiceAccountKey
        do { account = try ServiceAccountKey(json: try fileNode.fileContents()) } catch let error as ConfigError {
            throw error
        } catch {
            throw fileNode.error("not a usable service-account key file: \(error)")
        }
        if let node = mapping.optional("serviceAccount"), try node.nonEmptyString() != account.clientEmail {
            throw node.error("the service-account file is for \(account.clientEmail)")
        }
        do {
            return BoundKeySource(.fixed(try JWKSet(keys: [account.key.publicKey()])), serviceAccount: account.clientEmail)
        } catch {
            throw fileNode.error("not a usable verification key: \(error)")
        }
    }

    private static func loadFileKeys(_ mapping: ConfigMapping) throws -> [JWSKey] {
        if let fileNode = mapping.optional("jwksFile") {
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

extension VerificationKeys {
    /// The keys of fixed sources, each bound to its service account (the first source to name a `kid` wins); a
    /// URL source has no keys until it is fetched, so it adds none here.
    public init(fixed sources: [BoundKeySource]) throws {
        var keys: [JWSKey] = []
        var issuers: [String: String] = [:]
        for case (.fixed(let set), let serviceAccount) in sources.map({ ($0.source, $0.serviceAccount) }) {
            for key in set.keys {
                guard let keyID = key.keyID, issuers[keyID] == nil else { continue }
                keys.append(key.publicKey())
                issuers[keyID] = serviceAccount
            }
        }
        self.init(keySet: try JWKSet(keys: keys), issuers: issuers)
    }
}
