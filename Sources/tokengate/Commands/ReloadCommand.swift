import ArgumentParser
import Foundation

/// `tokengate reload`: asks a running `tokengate serve` to reload its configuration (SIGHUP).
struct ReloadCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reload",
        abstract: "Ask a running gateway to reload its configuration.",
        discussion: """
            Sends SIGHUP to the process named in the pid file that `tokengate serve --pid-file` wrote. Without a \
            pid file: `kill -HUP <pid>`, or `systemctl reload tokengate` under the bundled systemd unit. Whether \
            the reload took is in the gateway's log and in the admin listener's /readyz (generation and configSha256). Run \
            `tokengate check-config` first.
            """
    )

    @Option(name: .long, help: "The pid file of the running gateway.")
    var pidFile: String

    func run() throws {
        guard let data = FileManager.default.contents(atPath: pidFile) else {
            throw CLIFailure(
                .usage, "\(pidFile): no such pid file; start the gateway with `tokengate serve --pid-file \(pidFile)` or send SIGHUP yourself")
        }
        let text = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard let pid = Int32(text), pid > 1 else { throw CLIFailure(.usage, "\(pidFile): not a process ID") }
        guard kill(pid, SIGHUP) == 0 else {
            throw CLIFailure(.usage, "cannot signal process \(pid) from \(pidFile): \(String(cString: strerror(errno)))")
        }
        print("sent SIGHUP to tokengate (pid \(pid)); see its log or /readyz for the outcome")
    }
}
