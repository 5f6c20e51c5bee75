import Foundation
import Hummingbird
import JOSE
import Logging
import NIOCore
import TokenGateCore

/// A tenant's own token server, the "your server" an `upstream-http` backend fronts: a real Hummingbird server on
/// 127.0.0.1 and an ephemeral port. `POST /token` takes the gateway's JSON body (`{"providerId", "tokenType",
/// "context"}`) and answers `{"token": …}`, signed RS256 by the service account of that token type, valid an hour;
/// `GET /jwks/{account}` publishes that account's public key, as Google publishes an account's keys.
enum TenantTokenServer {
    /// Runs `body` with the server at the `http://127.0.0.1:PORT` it is given, signing with `accounts`; stops it
    /// afterwards whatever happens.
    static func run<Result: Sendable>(
        accounts: [TokenType: ServiceAccountKey], _ body: (String) async throws -> Result
    ) async throws -> Result {
        let router = Router()
        router.post("token") { request, _ -> Response in
            let bytes = Array(try await request.body.collect(upTo: 1 << 16).readableBytesView)
            guard let token = try? mint(bytes, accounts: accounts) else {
                return json(400, #"{"error": "not a token request this server can answer"}"#)
            }
            return json(200, String(decoding: JSON.serialize(.object(["token": .string(token)])), as: UTF8.self))
        }
        router.get("jwks/:account") { _, context -> Response in
            let email = context.parameters.get("account") ?? ""
            guard let account = accounts.values.first(where: { $0.clientEmail == email }) else {
                return json(404, #"{"error": "no such account"}"#)
            }
            return json(200, String(decoding: try JWKSet(keys: [account.key.publicKey()]).publicJSON(), as: UTF8.self))
        }
        let (ports, continuation) = AsyncStream.makeStream(of: Int.self)
        let app = Application(
            router: router,
            configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: "tenant-token-server"),
            onServerRunning: { channel in continuation.yield(channel.localAddress?.port ?? 0) },
            logger: Logger(label: "tenant-token-server") { _ in SwiftLogNoOpLogHandler() }
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
            return try await body("http://127.0.0.1:\(port)")
        }
    }

    /// A token for `context` as a tenant's own signer makes it: `account` signs the claims Fleet Engine expects,
    /// issued now, valid an hour.
    static func token(for context: TokenContext, signedBy account: ServiceAccountKey) throws -> String {
        let claims = FleetEngineClaims.claims(
            serviceAccount: account.clientEmail, audience: FleetEngineClaims.defaultAudience, context: context,
            issuedAt: Int64(Date().timeIntervalSince1970), lifetime: FleetEngineClaims.maxLifetime)
        return try JWSSigner(key: account.key).sign(claims: claims)
    }

    private struct NotATokenRequest: Error {}

    /// The token for the request body `bytes`: its type's account signs the claims of its context.
    private static func mint(_ bytes: [UInt8], accounts: [TokenType: ServiceAccountKey]) throws -> String {
        let request = try JSON.parse(bytes).objectValue
        guard let typeName = request?["tokenType"]?.stringValue, let type = TokenType(rawValue: typeName),
            let account = accounts[type], let members = request?["context"]?.objectValue
        else { throw NotATokenRequest() }
        var parameters: [String: String] = [:]
        for (name, value) in members {
            // `taskIds` arrives as an array; the context parser reads the comma-separated form of the token route.
            parameters[name] = value.stringValue ?? value.arrayValue?.compactMap(\.stringValue).joined(separator: ",")
        }
        return try token(for: try TokenContext.parse(type: type, parameters: parameters), signedBy: account)
    }

    private static func json(_ status: Int, _ body: String) -> Response {
        Response(
            status: HTTPResponse.Status(code: status), headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }
}
