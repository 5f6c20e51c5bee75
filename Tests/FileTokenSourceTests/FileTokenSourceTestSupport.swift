import FileTokenSource
import Foundation
import JOSE
import Logging
import Synchronization
import Testing
import TokenGateCore
import TokenGateTesting

/// A scratch directory with a verification JWKS, a signing service account and a token file.
struct Fixture {
    static let start: Int64 = 1_800_000_000
    static let account = try! ServiceAccountKey.generate(
        projectID: "acme-rides",
        clientEmail: "tokens@acme-rides.iam.gserviceaccount.com"
    )

    let directory: String
    let clock = ManualClock(wallSeconds: Fixture.start)
    let logs = LogRecorder()

    init() throws {
        directory = try TemporaryDirectory(prefix: "tg-file").path
        let jwks = try JWKSet(keys: [Fixture.account.key.publicKey()]).publicJSON()
        try write(String(decoding: jwks, as: UTF8.self), to: "jwks.json")
    }

    /// A token for `claimed` (by default `context`) signed by `key` (by default the fixture's account).
    static func token(
        _ context: TokenContext,
        claimed: TokenContext? = nil,
        issuedAt: Int64 = Fixture.start,
        lifetime: Int64 = 3600,
        key: JWSKey = Fixture.account.key
    ) throws -> String {
        let claims = FleetEngineClaims.claims(
            serviceAccount: Fixture.account.clientEmail,
            audience: FleetEngineClaims.defaultAudience,
            context: claimed ?? context,
            issuedAt: issuedAt,
            lifetime: lifetime
        )
        return try JWSSigner(key: key).sign(claims: claims)
    }

    /// Writes `text` in place, as a careless writer would, or atomically (a new file renamed over the old one).
    func write(_ text: String, to name: String = "tokens.yaml", atomically: Bool = false) throws {
        try Data(text.utf8).write(to: URL(fileURLWithPath: "\(directory)/\(name)"), options: atomically ? .atomic : [])
    }

    /// The `backend:` section of a provider, written as config.yaml and parsed with marks.
    func section(_ body: String) throws -> ConfigNode {
        let text = "backend:\n" + body
        try write(text, to: "config.yaml")
        let root = try ConfigNode.parse(Array(text.utf8), file: ConfigFile(path: "\(directory)/config.yaml", environment: [:]))
        return try root.mapping(allowedKeys: ["backend"]).required("backend")
    }

    static let defaultSection = """
          type: file
          path: tokens.yaml
          pollInterval: 10ms
          verify:
            - jwksFile: jwks.json
              serviceAccount: tokens@acme-rides.iam.gserviceaccount.com

        """

    /// Builds the backend from `section` as the gateway would.
    func makeSource(_ section: String = Fixture.defaultSection) async throws -> FileTokenSource {
        let backend = try await FileTokenSourceFactory().makeBackend(
            BackendContext(
                provider: ProviderID("acme-rides")!,
                section: try self.section(section),
                audience: FleetEngineClaims.defaultAudience,
                clock: clock.gatewayClock,
                logger: logs.logger
            )
        )
        return try #require(backend as? FileTokenSource)
    }

    /// The message of the error building the backend throws, or "no error".
    func loadError(_ section: String = Fixture.defaultSection) async -> String {
        do {
            _ = try await makeSource(section)
            return "no error"
        } catch {
            return "\(error)"
        }
    }
}

extension TokenRequest {
    static func with(_ context: TokenContext) -> TokenRequest {
        TokenRequest(provider: ProviderID("acme-rides")!, context: context)
    }
}

extension ContextID {
    static func id(_ raw: String) -> ContextID { ContextID(raw)! }
}
