import Foundation

/// Runs `openssl speed` for the three primitives TokenGate uses and reads sign/s and verify/s from its table.
enum OpenSSLSpeed {
    struct Key: Hashable {
        let algorithm: String  // "RS256", "ES256", "EdDSA"
        let operation: String  // "sign", "verify"
    }

    /// Row prefixes of `openssl speed` 3.x output and the JWS algorithm each one underlies.
    static let rows: [(prefix: String, algorithm: String)] = [
        ("rsa 2048 bits", "RS256"),
        ("256 bits ecdsa (nistp256)", "ES256"),
        ("253 bits EdDSA (Ed25519)", "EdDSA"),
    ]

    static func run(seconds: Int) throws -> [Key: Double] {
        let arguments = ["speed", "-seconds", String(seconds), "-elapsed", "rsa2048", "ecdsap256", "ed25519"]
        let output = try runOpenSSL(arguments)
        let table = parse(output)
        guard table.count == rows.count * 2 else {
            throw BenchmarkError("could not read `openssl \(arguments.joined(separator: " "))` output:\n\(output)")
        }
        return table
    }

    /// "rsa 2048 bits 0.000491s 0.000025s   2038.0  39429.0": the last two numbers are sign/s and verify/s.
    static func parse(_ output: String) -> [Key: Double] {
        var table: [Key: Double] = [:]
        for line in output.split(separator: "\n") {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            guard let row = rows.first(where: { trimmed.hasPrefix($0.prefix) }) else { continue }
            let numbers = trimmed.dropFirst(row.prefix.count).split(separator: " ").compactMap { Double($0) }
            guard numbers.count >= 2 else { continue }
            table[Key(algorithm: row.algorithm, operation: "sign")] = numbers[numbers.count - 2]
            table[Key(algorithm: row.algorithm, operation: "verify")] = numbers[numbers.count - 1]
        }
        return table
    }

    static func versionLine() -> String {
        (try? runOpenSSL(["version"]))?.trimmingCharacters(in: .whitespacesAndNewlines) ?? "openssl not found"
    }

    /// stdout of `openssl arguments…`; stderr (progress lines) is discarded. Output is a few KiB, so one pipe read
    /// after exit cannot deadlock.
    static func runOpenSSL(_ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw BenchmarkError("`openssl \(arguments.joined(separator: " "))` exited \(process.terminationStatus)")
        }
        return String(decoding: data, as: UTF8.self)
    }
}
