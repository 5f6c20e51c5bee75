package import NIOCore
import OpenSSLPrimitives

/// A Lua script and its SHA-1, the name under which the server caches it (`EVALSHA`).
package struct RESPScript: Sendable, Hashable {
    /// The Lua source.
    package let source: String
    /// Lower-case hexadecimal SHA-1 of the source, as `SCRIPT LOAD` returns it.
    package let sha1: String
    /// `sha1`, as sent.
    private let sha1Buffer: ByteBuffer

    /// A script for `source`; computes its SHA-1 through OpenSSL.
    package init(_ source: String) throws {
        self.source = source
        let digits = Array("0123456789abcdef")
        let digest = try Digest.sha1(Array(source.utf8))
        self.sha1 = String(digest.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 0xF)]] })
        self.sha1Buffer = ByteBuffer(string: sha1)
    }
}

extension RESPCommandSending {
    /// Runs `script` with `EVALSHA`, and, when the server no longer has it (`NOSCRIPT`: restarted, failed over,
    /// `SCRIPT FLUSH`), once more with `EVAL`, which also caches it for the next call.
    package func evalSHA(
        script: RESPScript, keys: [String] = [], args: [String] = [], deadline: Duration? = nil
    ) async throws -> RESPValue {
        do {
            return try await send(script.evalSHA(keys: keys, args: args), deadline: deadline)
        } catch let error as RESPError where error.serverCode == "NOSCRIPT" {
            return try await send(RESPCommand(["EVAL", script.source, String(keys.count)] + keys + args), deadline: deadline)
        }
    }

    /// ``evalSHA(script:keys:args:deadline:)`` with arguments that are bytes, not text (a sealed value).
    package func evalSHA(
        script: RESPScript, keys: [String] = [], binaryArgs: [ByteBuffer], deadline: Duration? = nil
    ) async throws -> RESPValue {
        do {
            return try await send(script.evalSHA(keys: keys, binaryArgs: binaryArgs), deadline: deadline)
        } catch let error as RESPError where error.serverCode == "NOSCRIPT" {
            return try await send(script.eval(keys: keys, binaryArgs: binaryArgs), deadline: deadline)
        }
    }
}

extension RESPScript {
    /// `EVALSHA` of this script with text arguments: answered `NOSCRIPT` by a server that does not have it cached.
    package func evalSHA(keys: [String], args: [String]) -> RESPCommand {
        var builder = evalSHA(keyCount: keys.count, capacity: (keys + args).reduce(0) { $0 + $1.utf8.count })
        for text in keys + args { builder.append(text) }
        return builder.command
    }

    /// `EVALSHA` of this script with `keyCount` keys, to append the keys to and then the arguments; with `loading`,
    /// `EVAL` of its source instead (which caches it on the server too).
    package func evalSHA(keyCount: Int, capacity: Int, loading: Bool = false) -> RESPCommandBuilder {
        let leading = loading ? [ByteBuffer(string: "EVAL"), ByteBuffer(string: source)] : [Self.evalSHAName, sha1Buffer]
        var builder = RESPCommandBuilder(leading, capacity: capacity + 8)
        builder.append(Int64(keyCount))
        return builder
    }

    private static let evalSHAName = ByteBuffer(string: "EVALSHA")

    /// `EVALSHA` of this script: answered `NOSCRIPT` by a server that does not have it cached.
    package func evalSHA(keys: [String], binaryArgs: [ByteBuffer]) -> RESPCommand {
        RESPCommand([ByteBuffer(string: "EVALSHA"), ByteBuffer(string: sha1)] + Self.tail(keys, binaryArgs))
    }

    /// `EVAL` of this script's source, which caches it too.
    package func eval(keys: [String], binaryArgs: [ByteBuffer]) -> RESPCommand {
        RESPCommand([ByteBuffer(string: "EVAL"), ByteBuffer(string: source)] + Self.tail(keys, binaryArgs))
    }

    private static func tail(_ keys: [String], _ binaryArgs: [ByteBuffer]) -> [ByteBuffer] {
        ([String(keys.count)] + keys).map { ByteBuffer(string: $0) } + binaryArgs
    }
}
