import Foundation
import JOSE
public import Logging

/// The one place running objects are made: turns a configuration file into a ``GatewayGeneration``.
///
/// In order: the configuration is parsed into values; a ``KeySetDirectory`` gets one key set per distinct JWKS URL
/// (the previous generation's set where it had the URL); each provider's backend is built by its plugin; then each
/// provider's runtime (keys, authenticator, cache, limiters), handing on from `previous` every part whose
/// configuration did not change; then the api-key ownership map. Nothing is started: the generation's
/// ``GatewayGeneration/services`` run only when `serve` (or a reload) runs them. Any error leaves nothing behind.
public struct GatewayAssembler: Sendable {
    /// The plugins.
    public var registry: BackendRegistry
    /// Where `${NAME}` values come from.
    public var environment: [String: String]
    /// Time for caches, limiters, backends and key sets.
    public var clock: TokenGateClock
    /// Where backends and key sets log.
    public var logger: Logger
    /// How key sets fetch their JWKS (AsyncHTTPClient in `serve`; tests bring their own).
    public var jwksFetcher: any JWKSFetcher
    /// How many verified session tokens each provider remembers.
    public var sessionMemoLimit: Int

    /// Creates an assembler.
    public init(
        registry: BackendRegistry,
        environment: [String: String],
        clock: TokenGateClock = .system,
        logger: Logger,
        jwksFetcher: any JWKSFetcher,
        sessionMemoLimit: Int = 100_000
    ) {
        self.registry = registry
        self.environment = environment
        self.clock = clock
        self.logger = logger
        self.jwksFetcher = jwksFetcher
        self.sessionMemoLimit = sessionMemoLimit
    }

    /// Builds the generation of the file at `path` (named in errors as given). With `only`, just that provider is
    /// parsed and built, so another tenant's unset `${VAR}` cannot stop a command about this one.
    public func build(path: String, previous: GatewayGeneration? = nil, only: ProviderID? = nil) async throws -> GatewayGeneration {
        guard let data = FileManager.default.contents(atPath: path) else {
            let reason = FileManager.default.fileExists(atPath: path) ? "cannot read the file" : "no such file"
            throw ConfigError(file: path, mark: nil, keyPath: "", message: reason)
        }
        return try await build(bytes: [UInt8](data), file: ConfigFile(path: path, environment: environment), previous: previous, only: only)
    }

    /// Builds the generation of configuration text that came from `file`.
    public func build(
        bytes: [UInt8], file: ConfigFile, previous: GatewayGeneration? = nil, only: ProviderID? = nil
    ) async throws -> GatewayGeneration {
        let configuration = try ConfigurationParser().parse(ConfigNode.parse(bytes, file: file), only: only)
        var keySets = KeySetDirectory.Builder(previous: previous?.keySets, fetcher: jwksFetcher, clock: clock, logger: logger)
        var providers: [ProviderID: ProviderRuntime] = [:]
        for (id, settings) in configuration.providers.sorted(by: { $0.key < $1.key }) {
            providers[id] = try await makeRuntime(settings, keySets: &keySets, previous: previous?.providers[id])
        }
        var owners: [[UInt8]: [ProviderID]] = [:]
        for (id, runtime) in providers {
            for client in runtime.settings.clients where !client.isRevoked {
                if case .apiKey(let digest) = client.credential { owners[digest, default: []].append(id) }
            }
        }
        return GatewayGeneration(
            number: (previous?.number ?? 0) + 1,
            configurationDigest: HexBytes.encode(try Digest.sha256(bytes)),
            configuration: configuration,
            providers: providers,
            keySets: keySets.build(),
            apiKeyOwners: owners
        )
    }

    private func makeRuntime(
        _ settings: ProviderSettings, keySets: inout KeySetDirectory.Builder, previous: ProviderRuntime?
    ) async throws -> ProviderRuntime {
        var logger = logger
        logger[metadataKey: "provider"] = "\(settings.id)"
        let built = try await makeBackend(settings, logger: logger)
        let fingerprints = try ProviderFingerprints(settings)
        // A backend whose settings and files are unchanged is handed on with its cache: no mint storm on reload.
        let keepsBackend = previous?.fingerprints.backend == fingerprints.backend
        let backend = keepsBackend ? previous!.backend : built
        let keys = ProviderKeys(
            parts: backend.verificationKeys.map { bound in
                switch bound.source {
                case .fixed(let set): .fixed(set, serviceAccount: bound.serviceAccount)
                case .url(let url): .remote(keySets.keySet(for: url), serviceAccount: bound.serviceAccount)
                }
            }
        )
        // Built even when an old one is kept, so its key URLs are registered with this generation's directory.
        let authenticator = CallerAuthenticator(
            provider: settings.id, clients: settings.clients, clock: clock,
            keySet: { keySets.keySet(for: $0) }, sessionMemoLimit: sessionMemoLimit)
        return ProviderRuntime(
            settings: settings,
            backend: backend,
            keys: keys,
            authenticator: previous?.fingerprints.clients == fingerprints.clients ? previous!.authenticator : authenticator,
            cache: keepsBackend ? previous!.cache : TokenCache(policy: settings.cache, clock: clock),
            limiters: previous?.fingerprints.limits == fingerprints.limits
                ? previous!.limiters : ProviderLimiters(settings.rateLimits, clock: clock),
            fingerprints: fingerprints
        )
    }

    private func makeBackend(_ settings: ProviderSettings, logger: Logger) async throws -> any TokenBackend {
        guard let factory = registry.factory(for: settings.backendType) else {
            let typeNode = try settings.backendSection.entries().first { $0.key == "type" }?.node
            throw (typeNode ?? settings.backendSection).error(
                "unknown backend type '\(settings.backendType)'; this build has: \(registry.types.joined(separator: ", "))"
            )
        }
        let context = BackendContext(
            provider: settings.id,
            section: settings.backendSection,
            audience: settings.audience,
            leeway: settings.leeway,
            clock: clock,
            logger: logger
        )
        return try await factory.makeBackend(context)
    }
}

extension ProviderFingerprints {
    /// Fingerprints of `settings`, files named in its sections included; taken after the backend was built, so a
    /// key file it generated counts from the first generation on.
    init(_ settings: ProviderSettings) throws {
        var backend = settings.backendSection.fingerprintText()
        backend += "|\(settings.audience)|\(settings.leeway)|\(settings.cache)|\(String(describing: settings.response))"
        var clients = settings.clientsSection.fingerprintText()
        clients += "|\(settings.leeway)"
        self.init(
            backend: try Digest.sha256(Array(backend.utf8)),
            clients: try Digest.sha256(Array(clients.utf8)),
            limits: try Digest.sha256(Array("\(settings.rateLimits)".utf8))
        )
    }
}
