import Foundation
import JOSE
import OpenSSLPrimitives

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
        try parseList(node, allowsURLs: allowsURLs, extraKeys: [])
    }

    /// ``parseList(_:allowsURLs:)`` for a backend whose entries may also name the token types their account signs
    /// (`tokenTypes: [consumer]`): the keys are bound to their account, and each token type to the accounts that may
    /// sign it (``signers(_:of:issuing:)``).
    public static func parseList(_ node: ConfigNode, allowsURLs: Bool, bindingTokenTypes: Bool) throws -> [BoundKeySource] {
        try parseList(node, allowsURLs: allowsURLs, extraKeys: bindingTokenTypes ? ["tokenTypes"] : [])
    }

    private static func parseList(_ node: ConfigNode, allowsURLs: Bool, extraKeys: Set<String>) throws -> [BoundKeySource] {
        let entries = try node.sequence()
        guard !entries.isEmpty else { throw node.error("list at least one key source") }
        return try entries.map { try parse($0, allowsURLs: allowsURLs, extraKeys: extraKeys) }
    }

    /// Which accounts may sign each of `tokenTypes`, from the `verify:` list at `node` (parsed as `sources`): an
    /// account signs what its entries' `tokenTypes:` say, or every type when one account signs them all. With keys of
    /// more than one account, every entry must say: the signing account's Fleet Engine role decides what a token may
    /// do, so a consumer's token must never be one the driver's account signed. A type no entry names, or an entry
    /// naming a type the backend does not issue, is a located error.
    public static func signers(_ node: ConfigNode, of sources: [BoundKeySource], issuing tokenTypes: Set<TokenType>) throws -> [TokenType: Set<
        String
    >] {
        let entries = try node.sequence()
        let accounts = Set(sources.map(\.serviceAccount))
        var signers: [TokenType: Set<String>] = [:]
        for (entry, source) in zip(entries, sources) {
            guard let typesNode = try entry.entries().first(where: { $0.key == "tokenTypes" })?.node else {
                guard accounts.count == 1 else {
                    throw entry.error(
                        "keys of \(accounts.count) service accounts verify this backend's tokens: say which token types this "
                            + "one's account (\(source.serviceAccount)) signs, with tokenTypes: [...]")
                }
                for type in tokenTypes { signers[type, default: []].insert(source.serviceAccount) }
                continue
            }
            for item in try typesNode.sequence() {
                let text = try item.string()
                guard let type = TokenType(rawValue: text), tokenTypes.contains(type) else {
                    throw item.error("not a token type this backend issues (\(tokenTypes.sorted().map(\.rawValue).joined(separator: ", ")))")
                }
                signers[type, default: []].insert(source.serviceAccount)
            }
        }
        for type in tokenTypes.sorted() where signers[type] == nil {
            throw node.error("no entry names the account that signs \(type) tokens (tokenTypes: [\(type)])")
        }
        return signers
    }

    private static func parse(_ entry: ConfigNode, allowsURLs: Bool, extraKeys: Set<String>) throws -> BoundKeySource {
        let mapping = try entry.mapping(
            allowedKeys: extraKeys.union([
                "jwksFile", "keyFile", "keyId", "jwksUrl", "refreshInterval", "serviceAccount", "serviceAccountFile",
            ]))
        let sources = ["jwksFile", "keyFile", "serviceAccountFile", "jwksUrl"].filter { mapping.optional($0) != nil }
        guard sources.count == 1 else { throw entry.error("give exactly one of jwksFile, keyFile, serviceAccountFile, jwksUrl") }
        if let node = mapping.optional("refreshInterval"), mapping.optional("jwksUrl") == nil {
            throw node.keyError("only for a jwksUrl: a file is read once, when the configuration loads")
        }
        if let node = mapping.optional("keyId"), mapping.optional("keyFile") == nil {
            throw node.keyError("only for a keyFile: a JWKS or service-account file names its own kids")
        }
        if let fileNode = mapping.optional("serviceAccountFile") {
            fileNode.warn(
                "a service-account key file holds the private key; a verifier needs only its public part: "
                    + "prefer the account's public keys (jwksUrl: https://www.googleapis.com/service_accounts/v1/jwk/EMAIL)")
            if let problem = try fileNode.privateKeyFilePermissionProblem() { fileNode.warn(problem) }
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
        let (keys, expiresAt) = try loadFileKeys(mapping)
        guard keys.allSatisfy({ $0.keyID != nil }) else { throw entry.error("every verification key needs a kid") }
        do {
            return BoundKeySource(.fixed(try JWKSet(keys: keys)), serviceAccount: serviceAccount, certificateExpiresAt: expiresAt)
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

    /// The public keys of a `jwksFile` or `keyFile`, and when the certificate a `keyFile` holds expires.
    private static func loadFileKeys(_ mapping: ConfigMapping) throws -> (keys: [JWSKey], certificateExpiresAt: Int64?) {
        if let fileNode = mapping.optional("jwksFile") {
            let keys: [JWSKey]
            do { keys = try JWKSet(json: try fileNode.fileContents()).keys } catch let error as ConfigError {
                throw error
            } catch {
                throw fileNode.error("not a usable JWKS: \(error)")
            }
            guard !keys.contains(where: \.isSymmetric) else {
                throw fileNode.error("a verification key set must hold public keys only, not a shared secret")
            }
            if keys.contains(where: \.isPrivate) { warnPrivate(fileNode) }
            return (keys.map { $0.publicKey() }, nil)
        }
        let fileNode = try mapping.required("keyFile")
        let keyID = try mapping.required("keyId").nonEmptyString()
        let key: JWSKey
        let text = String(decoding: try fileNode.fileContents(), as: UTF8.self)
        do {
            key = try JWSKey.pem(text, algorithm: .rs256, keyID: keyID)
        } catch {
            throw fileNode.error("not a usable RS256 public key or certificate: \(error)")
        }
        if key.isPrivate { warnPrivate(fileNode) }
        let validity = try checkValidity(ofCertificateIn: text, at: fileNode)
        return ([key.publicKey()], validity?.notAfter)
    }

    /// A verifier given a private key works, but the key is then on one more machine than it needs to be.
    private static func warnPrivate(_ node: ConfigNode) {
        node.warn("holds a private key; only its public part is used: give verifiers the public key or certificate")
        if let problem = try? node.privateKeyFilePermissionProblem() { node.warn(problem) }
    }

    /// A certificate outside its validity is refused: whoever issued it no longer vouches for its key.
    private static func checkValidity(ofCertificateIn text: String, at node: ConfigNode) throws -> CertificateValidity? {
        let validity: CertificateValidity?
        do { validity = try CertificateValidity.of(pem: text) } catch { throw node.error("not a usable certificate: \(error)") }
        guard let validity else { return nil }
        let now = Int64(Date().timeIntervalSince1970)
        if now > validity.notAfter {
            throw node.error("the certificate expired at \(Date(timeIntervalSince1970: TimeInterval(validity.notAfter)).formatted(.iso8601))")
        }
        if now < validity.notBefore {
            throw node.error(
                "the certificate is not valid before \(Date(timeIntervalSince1970: TimeInterval(validity.notBefore)).formatted(.iso8601))")
        }
        return validity
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
