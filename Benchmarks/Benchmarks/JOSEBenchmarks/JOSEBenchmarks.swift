// package-benchmark suite for JOSE: `swift package --package-path Benchmarks benchmark` (from the repository root).
// Time is reported, but only allocations are gated: a 2-core VM may lack an `instructions` counter and wall-clock
// time is noisy there, while the malloc count of one sign or verify is deterministic (STYLE.md section 9).
import Benchmark
import JOSE

let benchmarks: @Sendable () -> Void = {
    Benchmark.defaultConfiguration = .init(
        metrics: [.mallocCountTotal, .wallClock, .throughput],
        timeUnits: .microseconds,
        warmupIterations: 10,
        scalingFactor: .one,
        maxDuration: .seconds(2),
        maxIterations: 100_000,
        thresholds: [.mallocCountTotal: .init(relative: [.p90: 3], absolute: [.p90: 2])]
    )

    // Keys are made once, here: a benchmark closure runs again for every sample, and RSA key generation would
    // swamp the measurement and leave a handful of samples.
    for algorithm in [JWSAlgorithm.rs256, .es256, .edDSA] {
        let name = algorithm.rawValue
        let key: JWSKey
        do { key = try JWSKey.generate(algorithm, keyID: "bench") } catch { fatalError("\(name) key: \(error)") }
        let publicKey = key.publicKey()
        let input = signingInput(algorithm)
        guard let signature = try? key.signature(for: input), publicKey.isValidSignature(signature, for: input) else {
            fatalError("\(name): a fresh signature does not verify")
        }
        Benchmark("\(name)Sign") { benchmark in
            for _ in benchmark.scaledIterations { blackHole(try key.signature(for: input)) }
        }
        Benchmark("\(name)Verify") { benchmark in
            for _ in benchmark.scaledIterations { blackHole(publicKey.isValidSignature(signature, for: input)) }
        }
    }

    let verifier: JWTVerifier
    let token: String
    do {
        let key = try JWSKey.generate(.rs256, keyID: "bench")
        token = try JWSSigner(key: key).sign(
            claims: JSONObject([
                "iss": .string("fleet-engine-consumer@my-project-id.iam.gserviceaccount.com"),
                "aud": .string("https://fleetengine.googleapis.com/"),
                "iat": .integer(1_800_000_000), "exp": .integer(1_800_003_600),
                "authorization": .object(JSONObject(["vehicleid": .string("vehicle-42")])),
            ]))
        verifier = JWTVerifier(keys: try JWKSet(keys: [key.publicKey()]))
    } catch {
        fatalError("RS256 token: \(error)")
    }
    var policy = ValidationPolicy()
    policy.audiences = ["https://fleetengine.googleapis.com/"]
    Benchmark("RS256VerifyToken") { [policy] benchmark in
        for _ in benchmark.scaledIterations {
            blackHole(try verifier.verify(token, policy: policy, now: 1_800_000_100))
        }
    }
}

/// A typical Fleet Engine signing input (~400 bytes of "header.payload").
func signingInput(_ algorithm: JWSAlgorithm) -> [UInt8] {
    let header = #"{"alg":"\#(algorithm.rawValue)","typ":"JWT","kid":"6f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c"}"#
    let claims =
        #"{"iss":"fleet-engine-consumer@my-project-id.iam.gserviceaccount.com","#
        + #""sub":"fleet-engine-consumer@my-project-id.iam.gserviceaccount.com","#
        + #""aud":"https://fleetengine.googleapis.com/","iat":1800000000,"exp":1800003600,"#
        + #""authorization":{"tripid":"trip-8c1f4e2a","vehicleid":"vehicle-42"}}"#
    return Array((Base64URL.encode(Array(header.utf8)) + "." + Base64URL.encode(Array(claims.utf8))).utf8)
}
