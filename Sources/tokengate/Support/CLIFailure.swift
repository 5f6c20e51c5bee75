/// The exit statuses `tokengate` promises.
enum ExitStatus: Int32 {
    case success = 0
    /// The token was checked and rejected.
    case invalidToken = 1
    /// Bad arguments, an unreadable file or a configuration error.
    case usage = 2
    /// A running gateway answered with an error (`end-context`).
    case refused = 3
    /// A running gateway did not answer (`end-context`).
    case unavailable = 4
}

extension ExitStatus {
    /// `check-config --online`: the configuration is valid, but a service a backend needs said no.
    static let onlineCheckFailed = ExitStatus.refused
}

/// A failure that ends the command with a message on standard error and a specific status.
struct CLIFailure: Error, CustomStringConvertible {
    let status: ExitStatus
    let message: String

    init(_ status: ExitStatus, _ message: String) {
        self.status = status
        self.message = message
    }

    /// A usage or configuration error carrying `error`'s own description (a `ConfigError` names file:line:column).
    static func usage(_ error: any Error) -> CLIFailure {
        CLIFailure(.usage, "\(error)")
    }

    var description: String { message }
}
