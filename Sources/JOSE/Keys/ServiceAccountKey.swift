import OpenSSLPrimitives

/// A Google service-account JSON key file: `type` "service_account", `project_id`, `private_key_id`,
/// `private_key` (PKCS#8 PEM, RSA ≥ 2048) and `client_email`. The key is RS256 with keyID = `private_key_id`.
public struct ServiceAccountKey: Sendable {
    /// `project_id`, if present.
    public let projectID: String?
    /// `client_email`: the `iss` and `sub` of Fleet Engine tokens.
    public let clientEmail: String
    /// `private_key_id`: the `kid` of tokens signed with this key.
    public let privateKeyID: String
    /// The private RS256 key.
    public let key: JWSKey

    /// Reads a key file; refuses anything but a service account with a private RSA key of at least 2048 bits.
    public init(json: [UInt8]) throws {
        guard case .object(let object) = try JWSKey.parseKeyJSON(json) else {
            throw JWSKeyError(.malformedKey, "A service-account key file must be a JSON object.")
        }
        let fields = JWKFields(object)
        guard try fields.optionalString("type") == "service_account" else {
            throw JWSKeyError(.malformedKey, "Key file \"type\" is not \"service_account\".")
        }
        projectID = try fields.optionalString("project_id")
        clientEmail = try fields.string("client_email")
        privateKeyID = try fields.string("private_key_id")
        // Both end up in every token (iss/sub and kid): an empty one makes tokens nobody can verify by kid.
        guard !clientEmail.isEmpty, !privateKeyID.isEmpty else {
            throw JWSKeyError(.malformedKey, "\"client_email\" and \"private_key_id\" must not be empty.")
        }
        key = try JWSKey.pem(try fields.string("private_key"), algorithm: .rs256, keyID: privateKeyID)
        guard key.isPrivate else {
            throw JWSKeyError(.notPrivate, "The service account's \"private_key\" holds a public key.")
        }
    }

    private init(projectID: String?, clientEmail: String, privateKeyID: String, key: JWSKey) {
        self.projectID = projectID
        self.clientEmail = clientEmail
        self.privateKeyID = privateKeyID
        self.key = key
    }

    /// A fresh RSA-2048 key in the same shape. `private_key_id` is `keyID`, or by default 40 lowercase hex
    /// characters from RAND_bytes, as Google's own.
    public static func generate(projectID: String, clientEmail: String, keyID: String? = nil) throws
        -> ServiceAccountKey
    {
        let keyID = try keyID ?? randomKeyID()
        guard !clientEmail.isEmpty, !keyID.isEmpty else {
            throw JWSKeyError(.malformedKey, "\"client_email\" and \"private_key_id\" must not be empty.")
        }
        let key = try JWSKey.generate(.rs256, keyID: keyID)
        return ServiceAccountKey(projectID: projectID, clientEmail: clientEmail, privateKeyID: keyID, key: key)
    }

    private static func randomKeyID() throws -> String {
        let random = try withOpenSSL { () throws(OpenSSLError) in try Random.bytes(20) }
        let hex = Array("0123456789abcdef".utf8)
        return String(decoding: random.flatMap { [hex[Int($0 >> 4)], hex[Int($0 & 0xF)]] }, as: UTF8.self)
    }

    /// The Google key-file JSON. It includes the private key: callers write it with mode 0600.
    public func json() throws -> [UInt8] {
        var object = JSONObject()
        object["type"] = "service_account"
        if let projectID { object["project_id"] = .string(projectID) }
        object["private_key_id"] = .string(privateKeyID)
        object["private_key"] = .string(try key.privateKeyPEM())
        object["client_email"] = .string(clientEmail)
        object["auth_uri"] = "https://accounts.google.com/o/oauth2/auth"
        object["token_uri"] = "https://oauth2.googleapis.com/token"
        return JSON.serialize(.object(object))
    }
}
