import Logging
import NIOCore
import NIOSSL
import Synchronization
import TokenGateCore

/// The public listener's certificate and key, following the configuration: each TLS handshake asks for the
/// identity of the generation serving now, so a reload with a renewed certificate takes effect for the next
/// connection while open connections keep theirs (none is dropped).
///
/// The files were read and checked with OpenSSL when the generation was assembled; BoringSSL (swift-nio-ssl) parses
/// the same PEM here once per change. The minimum protocol version is fixed when the listener starts.
final class TLSIdentity: Sendable {
    private let service: TokenService
    private let logger: Logger
    private let current: Mutex<Loaded>

    private struct Loaded: Sendable {
        var settings: TLSSettings
        var chain: [NIOSSLCertificateSource]
        var key: NIOSSLPrivateKeySource

        var override: NIOSSLContextConfigurationOverride {
            var override = NIOSSLContextConfigurationOverride()
            override.certificateChain = chain
            override.privateKey = key
            return override
        }
    }

    /// The identity of `initial`, following `service`'s generations from then on.
    init(service: TokenService, initial: TLSSettings, logger: Logger) throws {
        self.service = service
        self.logger = logger
        current = Mutex(try Self.load(initial))
    }

    /// The listener's TLS configuration: the initial identity, the minimum version, and the per-handshake lookup.
    func configuration() -> TLSConfiguration {
        let loaded = current.withLock { $0 }
        var configuration = TLSConfiguration.makeServerConfiguration(certificateChain: loaded.chain, privateKey: loaded.key)
        configuration.minimumTLSVersion = loaded.settings.minimumVersion == .v1_3 ? .tlsv13 : .tlsv12
        configuration.sslContextCallback = { [self] _, promise in promise.succeed(self.identityNow()) }
        return configuration
    }

    /// The identity for a handshake starting now.
    private func identityNow() -> NIOSSLContextConfigurationOverride {
        guard let wanted = service.generation.configuration.server.tls else {
            // TLS switched off by a reload: the listener stays TLS until restart, on its last identity.
            return current.withLock { $0.override }
        }
        if let same = current.withLock({ $0.settings == wanted ? $0.override : nil }) { return same }
        do {
            let loaded = try Self.load(wanted)
            current.withLock { $0 = loaded }
            logger.notice("TLS certificate reloaded", metadata: ["not_after": "\(wanted.notAfter)"])
            return loaded.override
        } catch {
            logger.error("the reloaded TLS certificate could not be used; keeping the previous one", metadata: ["reason": "\(error)"])
            return current.withLock { loaded in
                loaded.settings = wanted  // once per change, not once per handshake
                return loaded.override
            }
        }
    }

    private static func load(_ settings: TLSSettings) throws -> Loaded {
        Loaded(
            settings: settings,
            chain: try NIOSSLCertificate.fromPEMBytes(Array(settings.certificateChainPEM.utf8)).map { .certificate($0) },
            key: .privateKey(try NIOSSLPrivateKey(bytes: Array(settings.privateKeyPEM.utf8), format: .pem)))
    }
}
