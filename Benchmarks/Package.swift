// swift-tools-version: 6.1
import PackageDescription

// Benchmarks live in their own package so the main manifest carries no benchmark dependencies (STYLE.md section 9).
let package = Package(
    name: "TokenGateBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "TokenGate", path: "../"),
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
    ],
    targets: [
        // Plain executable: TokenGate sign/verify operations per second against `openssl speed` on the same machine.
        .executableTarget(
            name: "jose-speed",
            dependencies: [.product(name: "JOSE", package: "TokenGate")],
            path: "Sources/jose-speed",
            swiftSettings: [
                .enableUpcomingFeature("ExistentialAny"),
                .enableUpcomingFeature("MemberImportVisibility"),
                .enableUpcomingFeature("InternalImportsByDefault"),
            ]
        ),
        // The load benchmark's yardstick (load/run.sh): a bare Hummingbird route returning a fixed body.
        .executableTarget(
            name: "bare-route",
            dependencies: [
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
            ],
            path: "Sources/bare-route",
            swiftSettings: [
                .enableUpcomingFeature("ExistentialAny"),
                .enableUpcomingFeature("MemberImportVisibility"),
                .enableUpcomingFeature("InternalImportsByDefault"),
            ]
        ),
    ]
)
