// swift-tools-version: 6.2
import Foundation
import PackageDescription

// libFuzzer harnesses, in a package of their own so the root package never builds them: each executable defines only
// `LLVMFuzzerTestOneInput` and takes its `main` from libFuzzer, so it links only with `-sanitize=fuzzer`.
// Build and run them with scripts/fuzz (seed corpora come from Fuzz/make-seeds.py at run time; nothing secret is
// committed). Only OpenSSLPrimitives, JOSE, YAML and TokenGateCore are built: the HTTP stack stays out of the
// instrumented build.
// The harnesses are TokenGate's own code, in a package of their own only for their build flags: they compile as
// members of TokenGate's package (`packageAccess: false` keeps SwiftPM from naming this package, and `-package-name`
// names TokenGate's), so they reach what its modules share as `package` without it being made public. SwiftPM names
// a path dependency's package after its folder (lower-cased, other characters than letters, digits and `_` as `_`),
// which depends on where the repository was cloned, so it is read off this file's own path.
let tokenGateFolder = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().lastPathComponent
let tokenGatePackageName: String = {
    let name = String(tokenGateFolder.lowercased().map { $0.isASCII && ($0.isLetter || $0.isNumber) ? $0 : "_" })
    return name.first?.isNumber == true ? "_" + name : name
}()

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .treatAllWarnings(as: .error),
    .unsafeFlags(["-package-name", tokenGatePackageName]),
]

let jose = Target.Dependency.product(name: "JOSE", package: "TokenGate")
let primitives = Target.Dependency.product(name: "OpenSSLPrimitives", package: "TokenGate")
let yaml = Target.Dependency.product(name: "YAML", package: "TokenGate")
let core = Target.Dependency.product(name: "TokenGateCore", package: "TokenGate")

let package = Package(
    name: "TokenGateFuzz",
    platforms: [.macOS(.v15)],
    dependencies: [.package(name: "TokenGate", path: "..")],
    targets: [
        // Invariant checks that crash (so libFuzzer keeps the input) and the seed-time fixtures the harnesses read.
        .target(name: "FuzzSupport", dependencies: [jose], packageAccess: false, swiftSettings: swiftSettings),

        .executableTarget(name: "fuzz-jws", dependencies: ["FuzzSupport", jose], packageAccess: false, swiftSettings: swiftSettings),
        .executableTarget(name: "fuzz-json", dependencies: ["FuzzSupport", jose], packageAccess: false, swiftSettings: swiftSettings),
        .executableTarget(name: "fuzz-jwk", dependencies: ["FuzzSupport", jose], packageAccess: false, swiftSettings: swiftSettings),
        .executableTarget(name: "fuzz-pem", dependencies: ["FuzzSupport", jose, primitives], packageAccess: false, swiftSettings: swiftSettings),
        .executableTarget(name: "fuzz-yaml", dependencies: ["FuzzSupport", yaml], packageAccess: false, swiftSettings: swiftSettings),
        .executableTarget(name: "fuzz-config", dependencies: ["FuzzSupport", core, yaml], packageAccess: false, swiftSettings: swiftSettings),
        .executableTarget(
            name: "fuzz-bearer", dependencies: ["FuzzSupport", core, jose, primitives], packageAccess: false, swiftSettings: swiftSettings),
        .executableTarget(
            name: "fuzz-query", dependencies: ["FuzzSupport", "LinkedQueryParameters", core], packageAccess: false, swiftSettings: swiftSettings),
        .executableTarget(
            name: "fuzz-upstream-response",
            dependencies: ["FuzzSupport", "LinkedUpstreamResponseMapping", core, jose, yaml],
            packageAccess: false, swiftSettings: swiftSettings
        ),

        // The real source files, through symlinks: QueryParameters lives in TokenGateHTTP and UpstreamResponseMapping
        // in the UpstreamTokenServer plugin, both pure and internal, and depending on those modules would put
        // Hummingbird, NIO and AsyncHTTPClient (with BoringSSL) into every fuzz build. `-enable-testing` lets the
        // harness reach the internal types with `@testable import`.
        .target(
            name: "LinkedQueryParameters",
            dependencies: [core, primitives],
            packageAccess: false, swiftSettings: swiftSettings + [.unsafeFlags(["-enable-testing"])]
        ),
        .target(
            name: "LinkedUpstreamResponseMapping",
            dependencies: [core, jose],
            packageAccess: false, swiftSettings: swiftSettings + [.unsafeFlags(["-enable-testing"])]
        ),
    ]
)
