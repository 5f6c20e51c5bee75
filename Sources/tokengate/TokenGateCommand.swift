import ArgumentParser
import Foundation

/// `tokengate`: the gateway and the tools an operator needs beside it.
///
/// Exit status, for every subcommand: 0 success (a valid token), 1 an invalid token, 2 a usage or
/// configuration error (the message names file, line:column and key).
@main
struct TokenGateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "tokengate",
        abstract: "Mints, fetches, verifies and serves Google Fleet Engine tokens for many tenants.",
        version: "0.1.0",
        subcommands: [
            ServeCommand.self, ReloadCommand.self, CheckConfigCommand.self, VerifyTokenCommand.self, MintCommand.self,
            MintSessionCommand.self, KeygenCommand.self, HashAPIKeyCommand.self, EndContextCommand.self,
        ]
    )

    static func main() async {
        do {
            var command = try parseAsRoot()
            if var command = command as? any AsyncParsableCommand {
                try await command.run()
            } else {
                try command.run()
            }
        } catch let failure as CLIFailure {
            FileHandle.standardError.write(Data("tokengate: \(failure.message)\n".utf8))
            Foundation.exit(failure.status.rawValue)
        } catch {
            // Help, --version and explicit exit codes keep their meaning; every other usage error is status 2.
            if error is ExitCode || exitCode(for: error) == .success { exit(withError: error) }
            FileHandle.standardError.write(Data("\(fullMessage(for: error))\n".utf8))
            Foundation.exit(ExitStatus.usage.rawValue)
        }
    }
}
