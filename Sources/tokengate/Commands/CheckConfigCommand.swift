import ArgumentParser
import TokenGateCore

/// `tokengate check-config`: loads everything the gateway would and summarises it.
struct CheckConfigCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "check-config",
        abstract: "Validate a configuration (keys parse, files readable) and summarise its providers.",
        discussion: "Exit status: 0 valid, 2 invalid (the message names file, line:column and key)."
    )

    @Argument(help: "The configuration file.")
    var file: String = "config.yaml"

    func run() async throws {
        var options = ConfigurationOptions()
        options.config = file
        let generation = try await options.withAssembler(logger: ConfigurationOptions.logger()) { try await options.assemble($0) }
        let server = generation.configuration.server
        print("\(file): OK")
        print("server: http://\(server.host):\(server.port)")
        print("config sha256: \(generation.configurationDigest)")
        for (id, provider) in generation.providers.sorted(by: { $0.key < $1.key }) {
            let settings = provider.settings
            let types = provider.backend.tokenTypes.sorted().map(\.rawValue).joined(separator: ", ")
            print("provider \(id)")
            print("  backend:  \(settings.backendType) (\(types))")
            print("  audience: \(settings.audience)")
            print("  clients:  \(settings.clients.map(Self.describe).joined(separator: "; "))")
            if let response = settings.response {
                print("  response: \(response.tokenKey), \(response.expiryKey) as \(response.expiryFormat.rawValue)")
            }
        }
    }

    private static func describe(_ client: ClientConfig) -> String {
        let kind = switch client.credential {
        case .apiKey: "api-key"
        case .jwt: "jwt"
        }
        let grants = client.allow.keys.sorted().map(\.rawValue).joined(separator: ",")
        return "\(client.name) (\(kind): \(grants))\(client.isRevoked ? " revoked" : "")"
    }
}
