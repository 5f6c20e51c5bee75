import OpenSSLPrimitives

/// A caller's API key as a test holds it: the plaintext a request sends and the digest config.yaml stores, so a
/// suite names one value instead of hashing its own constant.
package struct TestAPIKey: Sendable, Hashable, CustomStringConvertible {
    /// What the caller sends (`Authorization: Bearer <plaintext>`).
    package let plaintext: String

    package init(_ plaintext: String) { self.plaintext = plaintext }

    /// The key's SHA-256 in lower-case hex, as a client's or admin key's `keySha256` is written.
    package var sha256: String {
        do {
            return HexBytes.encode(try Digest.sha256(Array(plaintext.utf8)))
        } catch {
            preconditionFailure("cannot hash a test API key: \(error)")
        }
    }

    /// The plaintext, so a key interpolates where a bearer string is expected.
    package var description: String { plaintext }

    /// An admin key entry, `{ name: <name>, keySha256: <digest> }`, for an `adminKeys:` list.
    package func adminKey(_ name: String) -> String { "{ name: \(name), keySha256: \(sha256) }" }

    /// A provider's back-office caller, allowed what the test grants it.
    package static let dispatch = TestAPIKey("tg_dispatch_key_0123456789")
    /// A caller of another tenant, or a second caller of the same one.
    package static let other = TestAPIKey("tg_other_key_0123456789")
    /// An operator's admin key.
    package static let admin = TestAPIKey("tg_admin_key_0123456789")
}

/// One provider's block of config.yaml, written as the gateway's suites write it: settings lines, a backend and
/// api-key (or other) clients. Only what the suites vary is a parameter; the rest is one fixed layout, so the
/// shape of a test's configuration is read from what it passes, not from 30 lines of copied YAML.
package struct ProviderYAML: Sendable {
    /// The backend: a static-key one whose key files are generated at start, or any other written as given.
    package enum Backend: Sendable {
        /// `type: static-key`, one `{ serviceAccountFile: <file>, generateIfMissing: true }` per token type, in order.
        case staticKey([(tokenType: String, file: String)])
        /// A flow mapping written as given, e.g. `{ type: signing }`.
        case flow(String)
        /// A whole `backend:` section written at column 0 (a plugin fixture's, with its nested blocks), indented
        /// under the provider; empty lines are dropped.
        case yaml(String)

        /// static-key with one generated key file for every token type in `tokenTypes`.
        package static func staticKey(_ tokenTypes: [String], file: String) -> Backend {
            .staticKey(tokenTypes.map { ($0, file) })
        }
    }

    package var id: String
    /// Provider-level lines before the backend, each `key: value` (cache, rateLimits, compatibility, cors, ...).
    package var settings: [String]
    package var backend: Backend
    /// Each client one flow mapping (see `apiKey`), in order.
    package var clients: [String]

    package init(_ id: String, settings: [String] = [], backend: Backend, clients: [String]) {
        self.id = id
        self.settings = settings
        self.backend = backend
        self.clients = clients
    }

    /// An api-key client: `{ name: <name>, type: api-key, keySha256: <digest>, <extra>, allow: <allow> }`. `extra` is
    /// flow entries such as `revoked: true` or an `authorizer:`.
    package static func apiKey(_ name: String, _ key: TestAPIKey, allow: String = "{ consumer: any }", extra: String? = nil) -> String {
        "{ name: \(name), type: api-key, keySha256: \(key.sha256), \(extra.map { "\($0), " } ?? "")allow: \(allow) }"
    }

    /// The block, indented under `providers:`, ending in a newline.
    package var yaml: String {
        var text = "  \(id):\n"
        for line in settings { text += "    \(line)\n" }
        switch backend {
        case .flow(let mapping):
            text += "    backend: \(mapping)\n"
        case .yaml(let section):
            for line in section.split(separator: "\n") { text += "    \(line)\n" }
        case .staticKey(let keys):
            text += "    backend:\n      type: static-key\n      keys:\n"
            for (tokenType, file) in keys {
                text += "        \(tokenType): [{ serviceAccountFile: \(file), generateIfMissing: true }]\n"
            }
        }
        text += "    clients:\n"
        for client in clients { text += "      - \(client)\n" }
        return text
    }

    /// A whole config.yaml: `preamble` (top-level sections such as `server:` or `adminKeys:`, each line ending in a
    /// newline) and then `providers:` with each block.
    package static func config(preamble: String = "", _ providers: ProviderYAML...) -> String {
        config(preamble: preamble, providers: providers)
    }

    /// The same, for a list a test assembles (a provider left out of one version of the file).
    package static func config(preamble: String = "", providers: [ProviderYAML]) -> String {
        preamble + "providers:\n" + providers.map(\.yaml).joined()
    }
}
