// jose-speed: TokenGate's JWS sign and verify throughput on one core, next to `openssl speed` for the same
// primitives on the same machine. TokenGate does the same EVP work plus a SHA-256 of the signing input and, for
// ES256, the R‖S <-> DER conversion, so the ratio shows what the Swift layer costs.
//
// Usage: jose-speed [--seconds S] [--rounds N] [--no-openssl]
// With --rounds N each cell is the best of N rounds (TokenGate, then openssl, per round): on a shared VM the best
// round is the one least disturbed by other work.
import Foundation
import JOSE

struct Options {
    var seconds = 2.0
    var runOpenSSL = true
    var rounds = 1

    init(arguments: [String]) {
        var iterator = arguments.dropFirst().makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--seconds":
                guard let value = iterator.next().flatMap(Double.init), value > 0 else { usage() }
                seconds = value
            case "--rounds":
                guard let value = iterator.next().flatMap(Int.init), value > 0 else { usage() }
                rounds = value
            case "--no-openssl": runOpenSSL = false
            default: usage()
            }
        }
    }

    func usage() -> Never {
        FileHandle.standardError.write(Data("usage: jose-speed [--seconds S] [--rounds N] [--no-openssl]\n".utf8))
        exit(64)
    }
}

/// Keeps results alive so the optimiser cannot drop the measured work.
nonisolated(unsafe) var sink = 0

/// Operations per second of `body` on the calling thread: a short warm-up, then a loop for `seconds`.
func operationsPerSecond(seconds: Double, _ body: () throws -> Int) rethrows -> Double {
    let clock = ContinuousClock()
    let warmUpEnd = clock.now.advanced(by: .milliseconds(300))
    while clock.now < warmUpEnd { sink &+= try body() }
    let start = clock.now
    let end = start.advanced(by: .nanoseconds(Int64(seconds * 1e9)))
    var count = 0
    var now = start
    repeat {
        sink &+= try body()
        count += 1
        now = clock.now
    } while now < end
    let elapsed = (now - start) / .nanoseconds(1) / 1e9
    return Double(count) / elapsed
}

/// A typical Fleet Engine signing input: RS256/ES256 header with a 40-hex kid, consumer-token claims.
func fleetEngineSigningInput(algorithm: JWSAlgorithm) -> [UInt8] {
    let header =
        #"{"alg":"\#(algorithm.rawValue)","typ":"JWT","kid":"6f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c"}"#
    let claims =
        #"{"iss":"fleet-engine-consumer@my-project-id.iam.gserviceaccount.com","#
        + #""sub":"fleet-engine-consumer@my-project-id.iam.gserviceaccount.com","#
        + #""aud":"https://fleetengine.googleapis.com/","iat":1800000000,"exp":1800003600,"#
        + #""authorization":{"tripid":"trip-8c1f4e2a","vehicleid":"vehicle-42"}}"#
    let text = Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))
    return Array(text.utf8)
}

struct Row {
    let algorithm: String
    let operation: String
    let tokenGate: Double
    let openSSL: Double?
}

func measureTokenGate(seconds: Double) throws -> [Row] {
    var rows: [Row] = []
    for algorithm in [JWSAlgorithm.rs256, .es256, .edDSA] {
        let key = try JWSKey.generate(algorithm, keyID: "bench")
        let publicKey = key.publicKey()
        let input = fleetEngineSigningInput(algorithm: algorithm)
        let signature = try key.signature(for: input)
        guard publicKey.isValidSignature(signature, for: input) else {
            throw BenchmarkError("\(algorithm): a fresh signature does not verify")
        }
        let sign = try operationsPerSecond(seconds: seconds) { try key.signature(for: input).count }
        let verify = operationsPerSecond(seconds: seconds) { publicKey.isValidSignature(signature, for: input) ? 1 : 0 }
        rows.append(Row(algorithm: algorithm.rawValue, operation: "sign", tokenGate: sign, openSSL: nil))
        rows.append(Row(algorithm: algorithm.rawValue, operation: "verify", tokenGate: verify, openSSL: nil))
    }
    return rows
}

/// Full compact-JWT verification (split, base64url, header JSON, key choice, signature, claims).
func measureFullTokenVerify(seconds: Double) throws -> [Row] {
    var rows: [Row] = []
    for algorithm in [JWSAlgorithm.rs256, .es256, .edDSA] {
        let key = try JWSKey.generate(algorithm, keyID: "bench")
        let claims = JSONObject([
            "iss": .string("fleet-engine-consumer@my-project-id.iam.gserviceaccount.com"),
            "sub": .string("fleet-engine-consumer@my-project-id.iam.gserviceaccount.com"),
            "aud": .string("https://fleetengine.googleapis.com/"),
            "iat": .integer(1_800_000_000), "exp": .integer(1_800_003_600),
            "authorization": .object(JSONObject(["tripid": .string("trip-8c1f4e2a"), "vehicleid": .string("vehicle-42")])),
        ])
        let token = try JWSSigner(key: key).sign(claims: claims)
        let verifier = JWTVerifier(keys: try JWKSet(keys: [key.publicKey()]))
        var policy = ValidationPolicy()
        policy.audiences = ["https://fleetengine.googleapis.com/"]
        policy.maxLifetime = 3600
        policy.requireKeyID = true
        _ = try verifier.verify(token, policy: policy, now: 1_800_000_100)
        let rate = try operationsPerSecond(seconds: seconds) {
            try verifier.verify(token, policy: policy, now: 1_800_000_100).payload.count
        }
        rows.append(Row(algorithm: algorithm.rawValue, operation: "JWTVerifier.verify", tokenGate: rate, openSSL: nil))
    }
    return rows
}

struct BenchmarkError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// Cell-wise best of several rounds of the same rows.
func best(_ rounds: [[Row]]) -> [Row] {
    guard var result = rounds.first else { return [] }
    for round in rounds.dropFirst() {
        result = zip(result, round).map { kept, next in
            Row(
                algorithm: kept.algorithm, operation: kept.operation, tokenGate: max(kept.tokenGate, next.tokenGate),
                openSSL: [kept.openSSL, next.openSSL].compactMap { $0 }.max())
        }
    }
    return result
}

/// "0.52 0.87 1.02" from /proc/loadavg, so a reader can tell a quiet machine from a busy one.
func loadAverage() -> String {
    guard let text = try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8) else { return "n/a" }
    return text.split(separator: " ").prefix(3).joined(separator: " ")
}

let options = Options(arguments: CommandLine.arguments)
print(
    "jose-speed: \(options.seconds) s per operation, one thread, best of \(options.rounds) round(s); "
        + "\(OpenSSLSpeed.versionLine()); load average \(loadAverage())")
do {
    var primitiveRounds: [[Row]] = []
    var tokenRounds: [[Row]] = []
    for _ in 0..<options.rounds {
        var rows = try measureTokenGate(seconds: options.seconds)
        if options.runOpenSSL {
            let reference = try OpenSSLSpeed.run(seconds: Int(options.seconds.rounded(.up)))
            rows = rows.map { row in
                Row(
                    algorithm: row.algorithm, operation: row.operation, tokenGate: row.tokenGate,
                    openSSL: reference[OpenSSLSpeed.Key(algorithm: row.algorithm, operation: row.operation)])
            }
        }
        primitiveRounds.append(rows)
        tokenRounds.append(try measureFullTokenVerify(seconds: options.seconds))
    }
    printTable(best(primitiveRounds), title: "Signature primitives (sign = key.signature(for:), verify = isValidSignature)")
    print("")
    printTable(best(tokenRounds), title: "Full token verification (no openssl equivalent)")
    print("load average after: \(loadAverage())")
    if sink == 42 { print("") }  // keeps `sink` observable
} catch {
    FileHandle.standardError.write(Data("jose-speed: \(error)\n".utf8))
    exit(1)
}
