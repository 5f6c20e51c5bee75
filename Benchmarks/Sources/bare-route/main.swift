import BareServerSupport
import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore
import NIOPosix

// The load benchmark's yardstick: a Hummingbird server that answers the gateway's token route with a fixed JSON
// body of the gateway's size and headers, doing no work per request. Whatever the gateway serves slower than this
// is the gateway's own cost (authentication, policy, cache lookup, response building).
//
// Usage: bare-route [--port P] [--size N] [--host H] [--event-loops N]
// Prints `bare-route listening on http://HOST:PORT` on standard output once bound, like `tokengate serve`.

let options = BareServerOptions.parse(CommandLine.arguments, program: "bare-route")
let body = fixedTokenBody(size: options.size)
var logger = Logger(label: "bare-route")
logger.logLevel = .warning

// The same route shape (two path parameters) and the same response headers as the gateway's token route.
let router = Router()
router.get("/v1/providers/:providerId/tokens/:tokenType") { _, _ in
    Response(
        status: .ok,
        headers: [.contentType: "application/json", .cacheControl: "no-store"],
        body: .init(byteBuffer: body)
    )
}
// The gateway's HTTP/1 settings and server name, so the response headers match byte for byte.
let http1 = HTTP1Channel.Configuration(
    idleTimeout: .seconds(60),
    httpDecoderConfiguration: .init(maxHeaderFieldSize: 16 * 1024, maxHeaderListSize: 32 * 1024, maxHeaderFieldCount: 64)
)
let host = options.host
let app = Application(
    router: router,
    server: .http1(configuration: http1),
    configuration: .init(address: .hostname(options.host, port: options.port), serverName: "TokenGate"),
    onServerRunning: { channel in
        let port = channel.localAddress?.port ?? options.port
        FileHandle.standardOutput.write(Data("bare-route listening on http://\(host):\(port)\n".utf8))
    },
    // As many loops as the gateway runs where the benchmark pins both (one per CPU each may use).
    eventLoopGroupProvider: options.eventLoops.map { .shared(MultiThreadedEventLoopGroup(numberOfThreads: $0)) } ?? .singleton,
    logger: logger
)
try await app.runService()
