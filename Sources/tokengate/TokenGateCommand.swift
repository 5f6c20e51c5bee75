import ArgumentParser

/// `tokengate`: the gateway and the tools an operator needs beside it.
@main
struct TokenGateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tokengate",
        abstract: "Mints, fetches, verifies and serves Google Fleet Engine tokens for many tenants.",
        version: "0.1.0",
        subcommands: []
    )
}
