// swift-tools-version: 6.1
import PackageDescription

// Benchmarks live in their own package so the main manifest carries no benchmark dependencies (STYLE.md section 9).
//   Benchmarks/run-jose-speed.sh                                   TokenGate vs `openssl speed`, ops/s on one core
//   swift package --package-path Benchmarks benchmark              package-benchmark suite (malloc counts gated)
let upcomingFeatures: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "TokenGateBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "TokenGate", path: "../"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        // Already in the root package's graph (same requirement); bare-nio needs nothing else.
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        // MallocInterposer only: the default RuntimeInterposer trait pulls swift-runtime-interposer, which offline
        // builds cannot resolve.
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        // Plain executable: TokenGate sign/verify operations per second against `openssl speed` on the same machine.
        .executableTarget(
            name: "jose-speed",
            dependencies: [.product(name: "JOSE", package: "TokenGate")],
            path: "Sources/jose-speed",
            swiftSettings: upcomingFeatures
        ),
        // The load benchmark's yardstick (load/run.sh): a bare Hummingbird route returning a fixed body.
        // What the two yardstick servers share: their command line and their body.
        .target(
            name: "BareServerSupport",
            dependencies: [.product(name: "NIOCore", package: "swift-nio")],
            path: "Sources/BareServerSupport",
            swiftSettings: upcomingFeatures
        ),
        .executableTarget(
            name: "bare-route",
            dependencies: [
                "BareServerSupport",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            path: "Sources/bare-route",
            swiftSettings: upcomingFeatures
        ),
        // load/run.sh's second yardstick: SwiftNIO's HTTP/1 pipeline on one event loop answering every request with a
        // fixed body, no framework, no routing. What Hummingbird costs over it is the bare route's share.
        .executableTarget(
            name: "bare-nio",
            dependencies: [
                "BareServerSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Sources/bare-nio",
            swiftSettings: upcomingFeatures
        ),
        // load/run.sh's third yardstick (issue 49): the plainest NIO HTTP/1 server, one handler, a flush per answer.
        .executableTarget(
            name: "plain-nio",
            dependencies: [
                "BareServerSupport",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Sources/plain-nio",
            swiftSettings: upcomingFeatures
        ),
        // package-benchmark suite: RS256Sign, ES256Verify, …; thresholds in Thresholds/.
        .executableTarget(
            name: "JOSEBenchmarks",
            dependencies: [
                .product(name: "JOSE", package: "TokenGate"),
                .product(name: "Benchmark", package: "benchmark"),
            ],
            path: "Benchmarks/JOSEBenchmarks",
            swiftSettings: upcomingFeatures,
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
    ]
)
