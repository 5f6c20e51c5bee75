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
        return try await LoopbackHTTPServer.run(router, name: "google-keys-test") { url in try await body(server, url) }
    }

    private static func json(_ status: Int, _ body: String) -> Response {
        Response(
            status: HTTPResponse.Status(code: status), headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }
}
