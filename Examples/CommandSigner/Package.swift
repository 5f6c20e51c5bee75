// swift-tools-version: 6.2
import Foundation
import PackageDescription

// A TokenGate backend plugin in a package of its own, as a third party would write one: it sees only what TokenGate
// makes public for plugins, and its tests run TokenGate's contract check (BackendConformance).
//
// TokenGate is a path dependency here (two folders up); a path dependency's identity is its folder's name, which
// depends on where the repository was cloned, so it is read off this file's own path.
let tokenGate = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
let tokenGateIdentity = tokenGate.lastPathComponent.lowercased()

let package = Package(
    name: "CommandSigner",
    platforms: [.macOS(.v15)],
    products: [.library(name: "CommandSigner", targets: ["CommandSigner"])],
    dependencies: [.package(path: tokenGate.path)],
    targets: [
        .target(
            name: "CommandSigner",
            dependencies: [
                .product(name: "TokenGateCore", package: tokenGateIdentity),
                .product(name: "JOSE", package: tokenGateIdentity),
            ],
            swiftSettings: [.treatAllWarnings(as: .error)]
        ),
        .testTarget(
            name: "CommandSignerTests",
            dependencies: [
                "CommandSigner",
                .product(name: "TokenBackendConformance", package: tokenGateIdentity),
                .product(name: "TokenGateCore", package: tokenGateIdentity),
            ],
            swiftSettings: [.treatAllWarnings(as: .error)]
        ),
    ]
)
