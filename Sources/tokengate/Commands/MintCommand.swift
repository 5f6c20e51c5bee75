import ArgumentParser
import StaticKeySigner
import TokenGateCore

/// `tokengate mint`: signs a token offline with a static-key provider's active key.
struct MintCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mint",
        abstract: "Mint a token offline with a static-key provider (printed alone on standard output)."
    )

    @OptionGroup var configuration: ConfigurationOptions
    @Option(name: .long, help: "The provider ID.")
    var provider: String
    @OptionGroup var context: ContextOptions

    func run() async throws {
        let loaded = try await configuration.load()
        let provider = try loaded.provider(provider, file: configuration.config)
        guard let signer = provider.backend as? StaticKeySigner else {
            throw CLIFailure(.usage, "provider '\(provider.id)' has a \(provider.settings.backendType) backend; mint needs static-key")
        }
        let context = try context.context()
        do {
            print(try signer.mint(for: context).compact)
        } catch {
            throw CLIFailure(.usage, "\(error)")
        }
    }
}
