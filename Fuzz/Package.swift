// swift-tools-version: 6.2
import PackageDescription

// libFuzzer harnesses, in a package of their own so the root package never builds them: each executable defines only
// `LLVMFuzzerTestOneInput` and takes its `main` from libFuzzer, so it links only with `-sanitize=fuzzer`.
// Build and run them with scripts/fuzz (seed corpora come from Fuzz/make-seeds.py at run time; nothing secret is
// committed). Only JOSE, YAML and TokenGateCore are built: the HTTP stack stays out of the instrumented build.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .treatAllWarnings(as: .error),
]

let jose = Target.Dependency.product(name: "JOSE", package: "TokenGate")
let yaml = Target.Dependency.product(name: "YAML", package: "TokenGate")
let core = Target.Dependency.product(name: "TokenGateCore", package: "TokenGate")

let package = Package(
    name: "TokenGateFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "TokenGate", path: "..")],
    targets: [
        // Invariant checks that crash (so libFuzzer keeps the input) and the seed-time fixtures the harnesses read.
        .target(name: "FuzzSupport", dependencies: [jose], swiftSettings: swiftSettings),

        .executableTarget(name: "fuzz-jws", dependencies: ["FuzzSupport", jose], swiftSettings: swiftSettings),
        .executableTarget(name: "fuzz-json", dependencies: ["FuzzSupport", jose], swiftSettings: swiftSettings),
        .executableTarget(name: "fuzz-jwk", dependencies: ["FuzzSupport", jose], swiftSettings: swiftSettings),
        .executableTarget(name: "fuzz-pem", dependencies: ["FuzzSupport", jose], swiftSettings: swiftSettings),
        .executableTarget(name: "fuzz-yaml", dependencies: ["FuzzSupport", yaml], swiftSettings: swiftSettings),
        .executableTarget(name: "fuzz-config", dependencies: ["FuzzSupport", core, yaml], swiftSettings: swiftSettings),
        .executableTarget(name: "fuzz-bearer", dependencies: ["FuzzSupport", core, jose], swiftSettings: swiftSettings),
        .executableTarget(name: "fuzz-query", dependencies: ["FuzzSupport", "LinkedQueryParameters", core], swiftSettings: swiftSettings),
        .executableTarget(
            name: "fuzz-upstream-response",
            dependencies: ["FuzzSupport", "LinkedUpstreamResponseMapping", core, jose, yaml],
            swiftSettings: swiftSettings
        ),

        // The real source files, through symlinks: QueryParameters lives in TokenGateHTTP and UpstreamResponseMapping
        // in the UpstreamHTTPProvider plugin, both pure and internal, and depending on those modules would put
        // Hummingbird, NIO and AsyncHTTPClient (with BoringSSL) into every fuzz build. `-enable-testing` lets the
        // harness reach the internal types with `@testable import`.
        .target(
            name: "LinkedQueryParameters",
            dependencies: [core],
            swiftSettings: swiftSettings + [.unsafeFlags(["-enable-testing"])]
        ),
        .target(
            name: "LinkedUpstreamResponseMapping",
            dependencies: [core, jose],
            swiftSettings: swiftSettings + [.unsafeFlags(["-enable-testing"])]
        ),
    ]
)
