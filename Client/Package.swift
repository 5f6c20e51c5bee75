// swift-tools-version: 6.2
import PackageDescription

// The app-side client library, a package of its own so an app that depends on it gets Foundation and nothing else:
// no server package (Hummingbird, SwiftNIO, AsyncHTTPClient, …), no C library. Keep `dependencies` empty.
//
// The root package uses it by path for its integration tests (`.package(path: "Client")`).

// The root package's settings for every target of ours.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .treatAllWarnings(as: .error),
]

let package = Package(
    name: "TokenGateClient",
    platforms: [.macOS(.v15), .iOS(.v17)],
    products: [
        .library(name: "TokenGateClient", targets: ["TokenGateClient"])
    ],
    dependencies: [],
    targets: [
        // Foundation only, no C module, no server module.
        .target(name: "TokenGateClient", swiftSettings: swiftSettings),
        // Consumer and Driver SDK adapters, compiled where the Google SDKs can be imported; not a product.
        .target(
            name: "TokenGateClientExamples",
            dependencies: ["TokenGateClient"],
            path: "Examples",
            swiftSettings: swiftSettings
        ),
        .testTarget(name: "TokenGateClientTests", dependencies: ["TokenGateClient"], swiftSettings: swiftSettings),
    ],
    swiftLanguageModes: [.v6]
)
