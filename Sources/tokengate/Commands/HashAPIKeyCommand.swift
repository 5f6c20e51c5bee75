import ArgumentParser
import Foundation
import JOSE
import OpenSSLPrimitives
import TokenGateCore

/// `tokengate hash-api-key`: the `keySha256` value for an api-key client, so no key is ever stored in config.
struct HashAPIKeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "hash-api-key",
        abstract: "Print the SHA-256 digest of an API key for a client's keySha256 (or --generate a new key)."
    )

    @Argument(help: "The API key, or '-' (the default) to read it from standard input.")
    var key: String = "-"
    @Flag(name: .long, help: "Generate a new random API key and print it with its digest.")
    var generate = false

    func run() throws {
        if generate {
            let newKey = "tg_" + Base64URL.encode(try SecureRandom.bytes(count: 32))
            print("apiKey:    \(newKey)")
            print("keySha256: \(HexBytes.encode(try Digest.sha256(Array(newKey.utf8))))")
            return
        }
        var text = key
        if key == "-" { text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self) }
        text = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !text.isEmpty else { throw CLIFailure(.usage, "no key given") }
        print(HexBytes.encode(try Digest.sha256(Array(text.utf8))))
    }
}
