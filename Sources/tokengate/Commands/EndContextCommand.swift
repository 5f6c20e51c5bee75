import ArgumentParser
import AsyncHTTPClient
import Foundation
import JOSE
import NIOCore
import NIOHTTP1
import OutboundHTTP
import TokenGateCore

/// `tokengate end-context`: ends (or lifts) a trip, vehicle, task or shipment on a running gateway, through its
/// admin API.
struct EndContextCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "end-context",
        abstract: "End a trip, vehicle, task or shipment on a running gateway: evict its tokens and refuse new ones.",
        discussion: """
            Calls POST (or, with --lift, DELETE) /admin/v1/providers/{provider}/contexts/{type}/{id}/end on the \
            gateway's admin listener with the admin key in the TOKENGATE_ADMIN_KEY environment variable (never a \
            command-line argument: arguments are visible to every user of the machine). Tokens already handed out \
            stay valid at Fleet Engine until they expire.

            Exit status: 0 done, 2 usage error, 3 the gateway refused (its error code is printed), 4 no answer.
            """
    )

    @Option(name: .long, help: "The admin listener's URL.")
    var adminURL = "http://127.0.0.1:9464"
    @Option(name: .long, help: "The provider ID.")
    var provider: String
    @OptionGroup var context: ContextOptions
    @Flag(name: .long, help: "Lift an ended context instead: tokens are issued for it again.")
    var lift = false
    @Option(name: .long, help: "Give up after this many seconds.")
    var timeout: Int64 = 10

    func run() async throws {
        let context = try context.context()
        guard let providerID = ProviderID(provider) else { throw CLIFailure(.usage, "'\(provider)' is not a provider ID") }
        guard let id = context.id, EndedContexts.Key(provider: providerID, tokenType: context.tokenType, id: id) != nil else {
            throw CLIFailure(.usage, "\(context.tokenType) tokens name no single trip, vehicle, task or shipment to end")
        }
        guard let key = ProcessInfo.processInfo.environment["TOKENGATE_ADMIN_KEY"], !key.isEmpty else {
            throw CLIFailure(.usage, "set TOKENGATE_ADMIN_KEY to an admin key (adminKeys: in config.yaml)")
        }
        guard adminURL.hasPrefix("http://") || adminURL.hasPrefix("https://") else {
            throw CLIFailure(.usage, "--admin-url must be an http:// or https:// URL, got '\(adminURL)'")
        }
        let base = adminURL.hasSuffix("/") ? String(adminURL.dropLast()) : adminURL
        // The ID percent-encoded as one path segment (the gateway decodes it as UTF-8): a space, `+`, `%` or any
        // letter arrives as it was given.
        let segment = URLTemplate.percentEncode(id.rawValue)
        var request = HTTPClientRequest(url: "\(base)/admin/v1/providers/\(providerID)/contexts/\(context.tokenType)/\(segment)/end")
        request.method = lift ? .DELETE : .POST
        request.headers.add(name: "Authorization", value: "Bearer \(key)")

        // One attempt through the one outbound exchange: the whole answer within --timeout, at most 64 KiB of it.
        let exchange = RetryingExchange(client: HTTPClient.shared, retries: .once, maxBodyBytes: 64 << 10)
        let response = try await exchange.run(
            request,
            deadline: .now + .seconds(timeout),
            expired: { CLIFailure(.unavailable, "no answer from \(base): \(OutboundExchange.Failure.timedOut)") },
            classify: { outcome, _ in
                switch outcome {
                case .success(let response): .done(response)
                case .failure(let failure): .fail(CLIFailure(.unavailable, "no answer from \(base): \(failure)"))
                }
            })
        let object = (try? JSON.parse(response.body))?.objectValue ?? JSONObject()
        guard response.status == 200 else {
            let code = object["error"]?.objectValue?["code"]?.stringValue ?? "HTTP \(response.status)"
            let message = object["error"]?.objectValue?["message"]?.stringValue ?? ""
            throw CLIFailure(.refused, "the gateway refused: \(code)\(message.isEmpty ? "" : ": \(message)")")
        }
        if lift {
            let wasEnded = object["wasEnded"] == .bool(true)
            print("\(context.tokenType) \(context) at \(providerID): lifted\(wasEnded ? "" : " (it was not ended)")")
        } else {
            let until =
                object["endedUntil"]?.integerValue.map { ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: TimeInterval($0))) } ?? "?"
            let evicted = object["evictedTokens"]?.integerValue ?? 0
            print("\(context.tokenType) \(context) at \(providerID): ended until \(until); \(evicted) cached token(s) evicted")
        }
    }
}
