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
        // Arguments first: a usage error must not leave generated key files behind.
        let context = try context.context()
        try await configuration.withAssembler(logger: ConfigurationOptions.logger()) { assembler in
            let generation = try await configuration.assemble(assembler, only: provider)
            guard let runtime = generation.providers.values.first else { throw CLIFailure(.usage, "no provider '\(provider)'") }
            guard let signer = runtime.backend as? StaticKeySigner else {
                throw CLIFailure(.usage, "provider '\(runtime.id)' has a \(runtime.settings.backendType) backend; mint needs static-key")
            }
            do {
                print(try signer.mint(for: context).compact)
            } catch {
                throw CLIFailure(.usage, "\(error)")
            }
        }
    }
}
