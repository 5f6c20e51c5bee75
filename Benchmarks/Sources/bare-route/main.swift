import Foundation
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore

// The load benchmark's yardstick: a Hummingbird server that answers the gateway's token route with a fixed JSON
// body of the gateway's size and headers, doing no work per request. Whatever the gateway serves slower than this
// is the gateway's own cost (authentication, policy, cache lookup, response building).
//
// Usage: bare-route [--port P] [--size N] [--host H]
// Prints `bare-route listening on http://HOST:PORT` on standard output once bound, like `tokengate serve`.

struct Options {
    var host = "127.0.0.1"
    var port = 0
    var size = 1024

    static func parse(_ arguments: [String]) -> Options {
        var options = Options()
        var iterator = arguments.dropFirst().makeIterator()
        while let name = iterator.next() {
            guard let value = iterator.next() else { fail("\(name) needs a value") }
            switch name {
            case "--host": options.host = value
            case "--port": options.port = Int(value) ?? -1
            case "--size": options.size = Int(value) ?? -1
            default: fail("unknown option \(name); expected --host, --port or --size")
            }
        }
        guard (0...65535).contains(options.port) else { fail("--port must be 0 to 65535") }
        guard (16...1_000_000).contains(options.size) else { fail("--size must be 16 to 1000000 bytes") }
        return options
    }
}

func fail(_ message: String) -> Never {
    FileHandle.standardError.write(Data("bare-route: \(message)\n".utf8))
    exit(64)
}

/// `{"token":"xxx…x"}` padded to exactly `size` bytes.
func fixedBody(size: Int) -> ByteBuffer {
    let prefix = #"{"token":""#, suffix = #""}"#
    let padding = String(repeating: "x", count: size - prefix.utf8.count - suffix.utf8.count)
    return ByteBuffer(string: prefix + padding + suffix)
}

let options = Options.parse(CommandLine.arguments)
let body = fixedBody(size: options.size)
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
    logger: logger
)
try await app.runService()
