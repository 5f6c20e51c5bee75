public import NIOCore

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// The command line the load benchmark's yardstick servers (`bare-route`, `bare-nio`) share:
/// `[--host H] [--port P] [--size N] [--event-loops N]`. A bad argument ends the program with a message and exit
/// status 64.
public struct BareServerOptions: Sendable {
    public var host = "127.0.0.1"
    public var port = 0
    /// The response body's size in bytes.
    public var size = 1024
    /// How many event loops serve (`bare-route`; `bare-nio` always runs one), or nil for the framework's default.
    public var eventLoops: Int?

    /// Parses `arguments` (`CommandLine.arguments`); `program` names the server in error messages.
    public static func parse(_ arguments: [String], program: String) -> BareServerOptions {
        var options = BareServerOptions()
        var iterator = arguments.dropFirst().makeIterator()
        while let name = iterator.next() {
            guard let value = iterator.next() else { fail(program, "\(name) needs a value") }
            switch name {
            case "--host": options.host = value
            case "--port": options.port = Int(value) ?? -1
            case "--size": options.size = Int(value) ?? -1
            case "--event-loops": options.eventLoops = Int(value) ?? -1
            default: fail(program, "unknown option \(name); expected --host, --port, --size or --event-loops")
            }
        }
        if let loops = options.eventLoops, !(1...1024).contains(loops) { fail(program, "--event-loops must be 1 to 1024") }
        guard (0...65535).contains(options.port) else { fail(program, "--port must be 0 to 65535") }
        guard (16...1_000_000).contains(options.size) else { fail(program, "--size must be 16 to 1000000 bytes") }
        return options
    }

    /// Writes `program: message` to standard error, unbuffered, and exits with status 64 (EX_USAGE).
    public static func fail(_ program: String, _ message: String) -> Never {
        var line = "\(program): \(message)\n"
        line.withUTF8 { bytes in _ = write(2, bytes.baseAddress, bytes.count) }
        exit(64)
    }
}

/// `{"token":"xxx…x"}` padded to exactly `size` bytes: the yardsticks' body, the size of the gateway's.
public func fixedTokenBody(size: Int) -> ByteBuffer {
    let prefix = #"{"token":""#
    let suffix = #""}"#
    let padding = String(repeating: "x", count: size - prefix.utf8.count - suffix.utf8.count)
    return ByteBuffer(string: prefix + padding + suffix)
}
