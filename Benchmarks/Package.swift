// swift-tools-version: 6.1
import PackageDescription

// Benchmarks live in their own package so the main manifest carries no benchmark dependencies (STYLE.md section 9).
let package = Package(
    name: "TokenGateBenchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(name: "TokenGate", path: "../")
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
        )
    ]
)
