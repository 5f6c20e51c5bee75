import Hummingbird
import JOSE
import Logging
import NIOCore
import Synchronization

/// A stand-in for Google's per-account key lists (`GET /service_accounts/v1/jwk/{account}`, a JWKS of the
/// account's live public keys, as `https://www.googleapis.com` serves it): a real Hummingbird server on 127.0.0.1 and
/// an ephemeral port, whose lists a test changes mid-run (a key disabled or deleted in Google Cloud).
final class GoogleAccountKeysServer: Sendable {
    private let lists = Mutex<[String: [JWSKey]]>([:])
    private let asked = Mutex<[String]>([])

    /// Lists `keys` (their public halves) for `account` from now on.
    func publish(_ keys: [JWSKey], for account: String) { lists.withLock { $0[account] = keys.map { $0.publicKey() } } }

    /// Answers 404 for `account` from now on.
    func withdraw(_ account: String) { _ = lists.withLock { $0.removeValue(forKey: account) } }

    /// The accounts asked for, in order.
    var requests: [String] { asked.withLock { $0 } }

    /// Runs `body` with the server listening at the `http://127.0.0.1:PORT` it is given; stops it afterwards.
    static func with<Result: Sendable>(_ body: (GoogleAccountKeysServer, String) async throws -> Result) async throws -> Result {
        let server = GoogleAccountKeysServer()
        let router = Router()
        router.get("service_accounts/v1/jwk/:account") { _, context -> Response in
            let account = context.parameters.get("account") ?? ""
            server.asked.withLock { $0.append(account) }
            guard let keys = server.lists.withLock({ $0[account] }) else {
                // Google answers an unknown account with 404 and a JSON error.
                return Self.json(404, #"{"error": {"code": 404, "status": "NOT_FOUND"}}"#)
            }
            return Self.json(200, String(decoding: try JWKSet(keys: keys).publicJSON(), as: UTF8.self))
        }
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: "google-keys-test"),
            onServerRunning: { channel in continuation.yield(channel.localAddress?.port ?? 0) },
            logger: Logger(label: "google-keys-test") { _ in SwiftLogNoOpLogHandler() }
        )
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask { try await app.runService(gracefulShutdownSignals: []) }
            defer { group.cancelAll() }
            var port: Int?
            for await bound in ports {
                port = bound
                break
            }
            continuation.finish()
            guard let port, port > 0 else { throw CancellationError() }
            return try await body(server, "http://127.0.0.1:\(port)")
        }
    }

    private static func json(_ status: Int, _ body: String) -> Response {
        Response(
            status: HTTPResponse.Status(code: status), headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }
}
