import JOSE
import OpenSSLPrimitives
package import TokenGateCore

/// Builds `file` backends: pre-issued tokens read from a YAML or JSON file, for offline and batch setups.
///
/// ```yaml
/// backend:
///   type: file
///   path: tokens/acme.yaml        # string, required: the token file, relative to config.yaml; YAML or JSON
///   pollInterval: 5s              # duration, 10ms to 1h (default 5s): how often the running gateway looks at it
///   verify:                       # list, required: the keys the tokens must verify with (files only, no URLs)
///     - jwksFile: keys/acme-jwks.json
///       serviceAccount: consumer@acme.iam.gserviceaccount.com   # required: the iss those keys' tokens must carry
/// ```
///
/// The token file maps token type to context ID to compact JWS. `delivery-consumer` has two kinds of ID, so it
/// maps `tracking` and `task` to IDs; `server` has no ID, so its value is the one admin token itself:
///
/// ```yaml
/// consumer:                       # token type
///   trip-42: eyJhbGciOi…          # context ID: compact JWS
/// driver:
///   vehicle-7: eyJ…
/// delivery-driver:
///   van-3: eyJ…
/// delivery-consumer:
///   tracking:
///     track-1: eyJ…
///   task:
///     task-9: eyJ…
/// server: eyJ…                    # the fleet-wide admin token: trusted backends only
/// ```
///
/// JSON works too (`{"consumer": {"trip-42": "eyJ…"}}`): it is read by the same strict parser.
///
/// - Every token is verified as the gateway verifies it (and with the provider's leeway): signature with a `verify:` key, RS256, `aud`, lifetime,
///   and an `authorization` claim that is exactly the one for the type and ID it is filed under. A token that fails,
///   has expired, or is filed under an ID TokenGate refuses is skipped and logged at warning with its location and
///   reason code (never the token); the other tokens load.
/// - A missing or unparseable token file, an unknown token type or a value that is not a token is a
///   configuration error at load time. At run time the same problems leave the previous tokens in force.
/// - The file is read whole on every look and compared by SHA-256, so a rewrite within the same second and at the
///   same size is still seen. Writers should write a new file and `rename(2)` it over the old one.
package struct FileTokenSourceFactory: TokenBackendFactory {
    package let type = "file"

    /// The interval between looks at the file when `pollInterval` is not given.
    package static let defaultPollInterval: Duration = .seconds(5)

    /// Creates the factory.
    package init() {}

    package func makeBackend(_ context: BackendContext) async throws -> any TokenBackend {
        let section = try context.section.mapping(allowedKeys: ["type", "path", "pollInterval", "verify"])
        let pathNode = try section.required("path")
        let path = try pathNode.path()
        var pollInterval = Self.defaultPollInterval
        if let node = section.optional("pollInterval") {
            pollInterval = try node.duration()
            guard pollInterval >= .milliseconds(10), pollInterval <= .seconds(3600) else {
                throw node.error("must be between 10ms and 1h")
            }
        }
        let verifyNode = try section.required("verify")
        let sources = try BoundKeySource.parseList(verifyNode, allowsURLs: false)
        let keys: VerificationKeys
        do { keys = try VerificationKeys(fixed: sources) } catch { throw verifyNode.error("the keys do not form a valid key set: \(error)") }
        // The provider's own policy; minRemaining 1: a token is loaded only while `exp` is still ahead.
        let verifier = FleetEngineVerifier(keys: keys, audience: context.audience, leeway: context.leeway, minRemaining: 1)
        let initial: (table: TokenTable, digest: [UInt8])
        do {
            let bytes = try TokenFileReader.read(path, limit: TokenTable.maxFileBytes)
            let file = ConfigFile(path: path, environment: [:])
            let table = try TokenTable.parse(bytes, file: file, verifier: verifier, now: context.clock.wallSeconds())
            initial = (table, try Digest.sha256(bytes))
        } catch {
            throw pathNode.error("\(error)")
        }
        if let problem = initial.table.nothingVerified { throw pathNode.error(problem) }
        return FileTokenSource(
            path: path,
            pollInterval: pollInterval,
            verifier: verifier,
            verificationKeys: sources,
            clock: context.clock,
            logger: context.logger,
            initial: initial
        )
    }
}
