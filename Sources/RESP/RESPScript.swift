public import NIOCore
import JOSE

/// A Lua script and its SHA-1, the name under which the server caches it (`EVALSHA`).
public struct RESPScript: Sendable, Hashable {
    /// The Lua source.
    public let source: String
    /// Lower-case hexadecimal SHA-1 of the source, as `SCRIPT LOAD` returns it.
    public let sha1: String

    /// A script for `source`; computes its SHA-1 through OpenSSL (the JOSE module's digest).
    public init(_ source: String) throws {
        self.source = source
        let digits = Array("0123456789abcdef")
        let digest = try Digest.sha1(Array(source.utf8))
        self.sha1 = String(digest.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0xF)]] })
    }
}

extension RESPCommandSending {
    /// Runs `script` with `EVALSHA`, and, when the server no longer has it (`NOSCRIPT`: restarted, failed over,
    /// `SCRIPT FLUSH`), once more with `EVAL`, which also caches it for the next call.
    public func evalSHA(
        script: RESPScript, keys: [String] = [], args: [String] = [], deadline: Duration? = nil
    ) async throws -> RESPValue {
        try await evalSHA(script: script, keys: keys, binaryArgs: args.map { ByteBuffer(string: $0) }, deadline: deadline)
    }

    /// ``evalSHA(script:keys:args:deadline:)`` with arguments that are bytes, not text (a sealed value).
    public func evalSHA(
        script: RESPScript, keys: [String] = [], binaryArgs: [ByteBuffer], deadline: Duration? = nil
    ) async throws -> RESPValue {
        let tail = ([String(keys.count)] + keys).map { ByteBuffer(string: $0) } + binaryArgs
        do {
            return try await send(RESPCommand([ByteBuffer(string: "EVALSHA"), ByteBuffer(string: script.sha1)] + tail), deadline: deadline)
        } catch let error as RESPError where error.serverCode == "NOSCRIPT" {
            return try await send(RESPCommand([ByteBuffer(string: "EVAL"), ByteBuffer(string: script.source)] + tail), deadline: deadline)
        }
    }
}
