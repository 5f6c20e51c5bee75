import ArgumentParser
import Foundation
import JOSE
import Logging
import TokenGateCore
import TokenGateHTTP

/// `tokengate check-config`: assembles everything the gateway would, reports every error and warning it finds,
/// and summarises the providers.
struct CheckConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Validate a configuration (keys parse, files readable) and summarise its providers.",
        discussion: """
            Every error found is reported, not just the first; warnings (things that work but are probably a \
            mistake) are reported too. With --online, each backend asks the services it needs (a google-iam \
            backend: its credentials, and per service account whether IAM lets it sign), each signing key is \
            checked (still listed by Google with keyHealth.checkPublished, not near its expires: date), and each \
            acceptanceCheck: runs once (a token of each type, one read-only Fleet Engine call). Exit status: 0 valid \
            (warnings or not), 2 invalid (each message names file, line:column and key), 3 valid but an online \
            check failed.
            """
    )

    @Argument(help: "The configuration file.")
    var file: String = "config.yaml"

    @Flag(help: "Also ask the services each backend needs whether it can work (IAM: may the gateway sign as each account?).")
    var online = false

    func run() async throws {
        var options = ConfigurationOptions()
        options.config = file
        let (check, findings) = try await options.withAssembler(logger: ConfigurationOptions.logger(level: .error)) { assembler in
            let check = await assembler.check(path: file)
            var findings: [(ProviderID, OnlineFinding)] = []
            if online, let generation = check.generation, check.errors.isEmpty {
                // Acceptance checks mint through the same pipeline `serve` runs (verified, never cached or logged).
                let service = TokenService(generation: generation, logger: ConfigurationOptions.logger(level: .critical))
                for (id, provider) in generation.providers.sorted(by: { $0.key < $1.key }) {
                    findings += await provider.backend.checkOnline().map { (id, $0) }
                    findings += await provider.checkKeysOnline().map { (id, $0) }
                    await provider.fetchMissingKeys()
                    for (type, outcome) in await service.checkAcceptance(of: id) ?? [] {
                        findings.append((id, Self.finding(type, outcome)))
                    }
                }
            }
            return (check, findings)
        }
        let warnings = check.warnings.map { "tokengate: warning: \($0)\n" }.joined()
        guard let generation = check.generation, check.errors.isEmpty else {
            // Errors first, one per line in the order found, then the warnings; the last error goes out as the
            // command's own failure, so a single mistake reads exactly as every other command reports it.
            let errors = check.errors.dropLast().map { "tokengate: \($0)\n" }.joined()
            FileHandle.standardError.write(Data((errors + warnings).utf8))
            let last = check.errors.last.map { "\($0)" } ?? "\(file): invalid"
            let count = check.errors.count
            throw CLIFailure(.usage, count > 1 ? "\(last)\n\(file): \(count) errors" : last)
        }
        FileHandle.standardError.write(Data(warnings.utf8))
        let server = generation.configuration.server
        print("\(file): OK\(check.warnings.isEmpty ? "" : " (\(check.warnings.count) warning\(check.warnings.count == 1 ? "" : "s"))")")
        print("server: http://\(server.host):\(server.port)")
        print("config sha256: \(generation.configurationDigest)")
        if let shared = generation.configuration.sharedState {
            print(
                "shared state: \(shared.redis.redactedURL), \(shared.replicas) replicas, keys under "
                    + "\(shared.keyPrefix) (not connected by check-config)"
            )
        }
        for (id, provider) in generation.providers.sorted(by: { $0.key < $1.key }) {
            let settings = provider.settings
            let types = provider.backend.tokenTypes.sorted().map(\.rawValue).joined(separator: ", ")
            print("provider \(id)")
            print("  backend:  \(settings.backendType) (\(types))")
            if !provider.backend.summary.isEmpty { print("            \(provider.backend.summary)") }
            print("  audience: \(settings.audience)")
            for line in Self.keys(provider.backend.verificationKeys) { print("  keys:     \(line)") }
            print("  limits:   \(settings.rateLimits)")
            print(
                "  cache:    minRemaining \(settings.cache.minRemaining), refreshBefore "
                    + "\(settings.cache.refreshBefore), maxEntries \(settings.cache.maxEntries)"
            )
            print("  calls:    \(settings.backendGuard)")
            for client in settings.clients { print("  client:   \(Self.describe(client))") }
            if let response = settings.response {
                print("  response: \(response.tokenKey), \(response.expiryKey) as \(response.expiryFormat.rawValue)")
            }
            for finding in findings.filter({ $0.0 == id }).map(\.1) {
                print("  online:   \(finding.isOK ? "ok" : "FAILED"): \(finding.subject): \(finding.message)")
            }
        }
        let failed = findings.filter { !$0.1.isOK }
        if !failed.isEmpty {
            throw CLIFailure(.onlineCheckFailed, "\(file): \(failed.count) online check\(failed.count == 1 ? "" : "s") failed")
        }
    }

    /// An acceptance check's outcome as a finding: only `accepted` is ok (no verdict is no proof).
    private static func finding(_ type: TokenType, _ outcome: AcceptanceOutcome) -> OnlineFinding {
        let subject = "Fleet Engine acceptance of \(type) tokens"
        switch outcome.verdict {
        case .accepted: return OnlineFinding(subject: subject, isOK: true, message: "accepted (\(outcome.summary))")
        case .refused: return OnlineFinding(subject: subject, isOK: false, message: "refused (\(outcome.summary)): \(outcome.detail)")
        case .unknown: return OnlineFinding(subject: subject, isOK: false, message: "no verdict: \(outcome.detail)")
        }
    }

    private static func keys(_ sources: [BoundKeySource]) -> [String] {
        sources.map { source in
            switch source.source {
            case .fixed(let set): "kid \(set.keys.map { $0.keyID ?? "-" }.joined(separator: ", ")) for \(source.serviceAccount)"
            case .url(let url): "\(url.url) (every \(url.refreshInterval)) for \(source.serviceAccount)"
            }
        }
    }

    private static func describe(_ client: ClientConfig) -> String {
        let kind =
            switch client.credential {
            case .apiKey: "api-key"
            case .jwt(let session):
                switch session.keySource {
                case .fixed: "jwt from \(session.issuer)"
                case .url(let url): "jwt from \(session.issuer), keys at \(url.url)"
                }
            }
        let grants = client.allow.keys.sorted().map(\.rawValue).joined(separator: ",")
        return "\(client.name) (\(kind): \(grants))\(client.isRevoked ? " revoked" : "")\(describe(client.authorizer))"
    }

    /// Where the authorizer is and its timing; never the query, which may carry a secret from `${ENV}`.
    private static func describe(_ authorizer: AuthorizerSettings?) -> String {
        guard let authorizer else { return "" }
        let template = authorizer.url.description
        let withoutQuery = template.prefix { $0 != "?" }
        return ", asks \(withoutQuery) (cached \(authorizer.cacheFor), timeout \(authorizer.timeout))"
    }
}
