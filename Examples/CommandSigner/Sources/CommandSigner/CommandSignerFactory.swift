import JOSE
public import TokenGateCore

/// Builds `command-signer` backends: tokens signed by an external command, for keys that never leave a hardware
/// module or a signing service reached through its own tool (an OpenSSL provider, a PKCS #11 engine, a cloud CLI).
///
/// ```yaml
/// backend:
///   type: command-signer
///   serviceAccount: fleet-signer@acme-rides.iam.gserviceaccount.com   # the tokens' iss and sub
///   keyId: hsm-key-1                          # the kid they carry; a verify: key must have it
///   command: [openssl, dgst, -sha256, -sign, signer.pem]   # reads the signing input, writes the RS256 signature
///   timeout: 5s                               # per signature, 100ms to 30s (default 5s)
///   tokenTypes: [consumer, driver]
///   tokenLifetime: 30m                        # or per type: { default: 1h, consumer: 15m }
///   verify:                                   # the public half, bound to the account
///     - keyFile: signer.pub.pem
///       keyId: hsm-key-1
///       serviceAccount: fleet-signer@acme-rides.iam.gserviceaccount.com
/// ```
///
/// The command runs in the folder of config.yaml, found on `PATH`, without a shell. It gets
/// `base64url(header).base64url(claims)` on its standard input and must write the RSASSA-PKCS1-v1_5 SHA-256
/// signature of those bytes, raw, on its standard output, and exit 0.
public struct CommandSignerFactory: TokenBackendFactory {
    public let type = "command-signer"

    /// Creates the factory.
    public init() {}

    public func makeBackend(_ context: BackendContext) async throws -> any TokenBackend {
        let section = try context.section.mapping(
            allowedKeys: Set(["type", "serviceAccount", "keyId", "command", "timeout", "tokenTypes", "verify"]).union(TokenLifetimes.keys))
        let serviceAccount = try section.required("serviceAccount").nonEmptyString()
        let keyIDNode = try section.required("keyId")
        let keyID = try keyIDNode.nonEmptyString()
        let commandNode = try section.required("command")
        let command = try commandNode.stringList()
        guard !command.isEmpty else { throw commandNode.error("name the program and its arguments, e.g. [openssl, dgst, -sha256, -sign, key.pem]") }
        var timeout = Duration.seconds(5)
        if let node = section.optional("timeout") {
            timeout = try node.duration()
            guard timeout >= .milliseconds(100), timeout <= .seconds(30) else { throw node.error("must be between 100ms and 30s") }
        }
        let typesNode = try section.required("tokenTypes")
        var types: Set<TokenType> = []
        for name in try typesNode.stringList() {
            guard let type = TokenType(rawValue: name) else { throw typesNode.error("'\(name)' is not a token type") }
            types.insert(type)
        }
        guard !types.isEmpty else { throw typesNode.error("name at least one token type") }
        let lifetimes = try TokenLifetimes.parse(section, issuing: types)
        let verifyNode = try section.required("verify")
        let keys = try BoundKeySource.parseList(verifyNode, allowsURLs: false)
        // A kid no verify: key has, or one bound to another account, would make every token fail verification:
        // refused here, where the operator reads the line, not at the first request.
        let verification: VerificationKeys
        do { verification = try VerificationKeys(fixed: keys) } catch { throw verifyNode.error("the keys do not form a valid key set: \(error)") }
        guard let boundTo = verification.issuers[keyID] else { throw keyIDNode.error("no verify: key has the kid '\(keyID)'") }
        guard boundTo == serviceAccount else {
            throw keyIDNode.error("the verify: key '\(keyID)' is bound to \(boundTo), not to serviceAccount \(serviceAccount)")
        }
        return CommandSigner(
            signing: SigningCommand(arguments: command, directory: context.section.file.directory, timeout: timeout),
            serviceAccount: serviceAccount, keyID: keyID, audience: context.audience, tokenTypes: types, lifetimes: lifetimes,
            verificationKeys: keys, clock: context.clock)
    }
}
