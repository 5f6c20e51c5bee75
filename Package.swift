// swift-tools-version: 6.2
import PackageDescription

// One settings array for every target of ours (dependencies are untouched).
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .treatAllWarnings(as: .error),
]

let package = Package(
    name: "TokenGate",
    platforms: [.macOS(.v15), .iOS(.v17)],
    products: [
        .executable(name: "tokengate", targets: ["tokengate"]),
        // For backend plugins in other packages (Examples/CommandSigner): the seam (TokenBackend, its factory, the
        // context it gets, configuration nodes and errors), the JOSE and YAML types it names, and the contract checks
        // their tests run. Only that seam is `public`; what TokenGate's own modules share is `package`. The fuzz
        // harnesses in Fuzz/ depend on these products too, compiled as members of this package (see its manifest).
        .library(name: "OpenSSLPrimitives", targets: ["OpenSSLPrimitives"]),
        .library(name: "JOSE", targets: ["JOSE"]),
        .library(name: "YAML", targets: ["YAML"]),
        .library(name: "TokenGateCore", targets: ["TokenGateCore"]),
        .library(name: "TokenBackendConformance", targets: ["TokenBackendConformance"]),
    ],
    traits: [
        // swift-otel does not compile under -sanitize=thread (two of its `sending` checks fail there only), so the
        // sanitizer builds leave it out with --disable-default-traits; `tracing:` then refuses to start.
        .trait(name: "OpenTelemetry", description: "Export spans over OTLP/HTTP with swift-otel (`tracing:` in config.yaml)"),
        .default(enabledTraits: ["OpenTelemetry"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.35.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // Spans (the API Hummingbird and AsyncHTTPClient already trace through) and their OTLP/HTTP export; gRPC
        // export is left out (its trait pulls grpc-swift, minutes of build for a second wire format).
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
        // The app-side client (Client/), a package of its own with no dependencies so apps don't pull the server's
        // graph; used here by the integration tests only. Its identity is the folder name, `Client`.
        .package(path: "Client"),
        // `swift package generate-documentation`: the plugin API's DocC catalogue (scripts/docs, run in CI).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin.git", from: "1.5.0"),
    ],
    targets: [
        // C libraries: each imported by exactly one Swift module.
        .systemLibrary(
            name: "COpenSSL",
            pkgConfig: "libcrypto",
            providers: [.apt(["libssl-dev"]), .brew(["openssl@3"])]
        ),
        .systemLibrary(
            name: "CYAML",
            pkgConfig: "yaml-0.1",
            providers: [.apt(["libyaml-dev"]), .brew(["libyaml"])]
        ),

        // OpenSSL's primitives that are not JOSE: digests (SHA-1 only for Redis script names), constant-time
        // comparison, random bytes, AES-256-GCM, certificate validity, and the error queue and BIO/PEM plumbing JOSE
        // builds on.
        .target(name: "OpenSSLPrimitives", dependencies: ["COpenSSL"], swiftSettings: swiftSettings),
        // JOSE over OpenSSL EVP: keys, JWS signing and verification, JWT claim checks.
        .target(name: "JOSE", dependencies: ["COpenSSL", "OpenSSLPrimitives"], swiftSettings: swiftSettings),
        // A strict YAML reader over libyaml: nodes with line:column marks.
        .target(name: "YAML", dependencies: ["CYAML"], swiftSettings: swiftSettings),

        // The Redis client: RESP2/RESP3 over SwiftNIO, a bounded pool, TLS, scripts, pub/sub. The only module that
        // speaks RESP, and it knows nothing of tokens; OpenSSL's primitives only for the script SHA-1.
        .target(
            name: "RESP",
            dependencies: [
                "OpenSSLPrimitives",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOTLS", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),

        // The shared state of several replicas, on Redis: the one place the core meets the RESP client.
        .target(
            name: "TokenGateRedis",
            dependencies: [
                "TokenGateCore", "RESP",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // The gateway's domain: Fleet Engine token model, configuration, backends, cache, limits, callers.
        .target(
            name: "TokenGateCore",
            dependencies: [
                "JOSE", "OpenSSLPrimitives", "YAML",
                .product(name: "CoreMetrics", package: "swift-metrics"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),

        // The one exchange for requests to other servers (Google, IAM, upstream token servers, JWKS URLs, authorizers,
        // Fleet Engine): each attempt's head and body within deadlines, the body capped, no redirect used; retries by
        // a caller's classification hook and RetryPolicy, one Retry-After parser, the process's client configuration.
        .target(
            name: "OutboundHTTP",
            dependencies: [
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),

        // Google's Application Default Credentials: service-account, user, workload-identity-federation (subject
        // tokens from files, URLs, AWS, executables and X.509 certificates) and impersonation files, and the
        // metadata server; OAuth access tokens cached and refreshed ahead. Knows nothing of Fleet Engine. OpenSSL's
        // primitives for AWS's request signature; NIOSSL for the client certificate of mutual TLS.
        .target(
            name: "GoogleAuth",
            dependencies: [
                "JOSE",
                "OpenSSLPrimitives",
                "OutboundHTTP",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: swiftSettings
        ),

        // Backend plugins: compile-time plugins, statically linked, listed in the CLI's registry.
        .target(
            name: "StaticKeySigner",
            dependencies: ["TokenGateCore", "JOSE"],
            path: "Plugins/StaticKeySigner",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "UpstreamTokenServer",
            dependencies: [
                "TokenGateCore", "JOSE", "OutboundHTTP",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            path: "Plugins/UpstreamTokenServer",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "GoogleIAMSigner",
            dependencies: [
                "TokenGateCore", "JOSE", "GoogleAuth", "OutboundHTTP",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Plugins/GoogleIAMSigner",
            swiftSettings: swiftSettings
        ),
        .target(
            name: "FileTokenSource",
            dependencies: [
                "TokenGateCore", "JOSE", "OpenSSLPrimitives", "YAML",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            path: "Plugins/FileTokenSource",
            swiftSettings: swiftSettings
        ),

        // The core's network seams over the one outbound exchange: key-set fetches, clients' authorizers, Fleet
        // Engine's acceptance checks. No Hummingbird: the HTTP face serves, this calls out.
        .target(
            name: "TokenGateOutbound",
            dependencies: [
                "TokenGateCore", "OutboundHTTP",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),

        // The HTTP face: routes, request context, the only place errors become status codes.
        .target(
            name: "TokenGateHTTP",
            dependencies: [
                "TokenGateCore", "JOSE", "OpenSSLPrimitives",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOHTTPTypesHTTP1", package: "swift-nio-extras"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            exclude: ["OpenAPI/openapi.json"],
            swiftSettings: swiftSettings
        ),

        // Test support, light: redis-server and Sentinel groups, loopback servers, temporary directories. RESP's
        // suites need nothing more, so they build neither Hummingbird nor the gateway.
        .target(
            name: "RESPTesting",
            dependencies: [
                "RESP", "TestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // The contract every backend plugin meets, checked on a real instance: a plugin's tests run it (ours here, a
        // third party's in its own package), so it needs nothing of the gateway beyond the plugin seam.
        .target(
            name: "TokenBackendConformance",
            dependencies: [
                "TokenGateCore", "JOSE",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // Test support, light: the manual clock, the log recorder, test timing, API keys and config.yaml text; nothing
        // but the core.
        .target(
            name: "TokenGateCoreTesting",
            dependencies: ["TokenGateCore", "OpenSSLPrimitives", "TestSupport", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        // What any suite may need and no server implies: temporary directories, `eventually`, child processes.
        .target(name: "TestSupport", swiftSettings: swiftSettings),
        // Test support for the gateway (re-exports both light kits): a real gateway on an ephemeral port, the Google
        // stand-in, haproxy, metrics scrapes.
        .target(
            name: "TokenGateTesting",
            dependencies: [
                "TokenGateCore", "TokenGateHTTP", "TokenGateOutbound", "TokenGateRedis", "StaticKeySigner", "JOSE", "RESP",
                "RESPTesting", "TokenGateCoreTesting",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),

        // The one executable: serve, verify-token, check-config, mint, keygen, hash-api-key.
        .executableTarget(
            name: "tokengate",
            dependencies: [
                "TokenGateCore", "TokenGateHTTP", "TokenGateOutbound", "TokenGateRedis", "JOSE", "OpenSSLPrimitives",
                "StaticKeySigner", "UpstreamTokenServer", "FileTokenSource", "GoogleIAMSigner", "OutboundHTTP",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "OTel", package: "swift-otel", condition: .when(traits: ["OpenTelemetry"])),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),

        .testTarget(name: "JOSETests", dependencies: ["JOSE", "OpenSSLPrimitives"], swiftSettings: swiftSettings),
        // The outbound exchange's pure parts (Retry-After, the retry policy); its runs against a real server are in
        // UpstreamTokenServerTests, beside the scripted loopback server.
        .testTarget(name: "OutboundHTTPTests", dependencies: ["OutboundHTTP"], swiftSettings: swiftSettings),
        // Against the Google stand-in (Tests/Peers/google), started by the tests on a loopback port.
        .testTarget(
            name: "GoogleAuthTests",
            dependencies: [
                "GoogleAuth", "JOSE", "TokenGateTesting",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(name: "YAMLTests", dependencies: ["YAML"], swiftSettings: swiftSettings),
        // Against a real redis-server on an ephemeral loopback port, started by the tests.
        .testTarget(
            name: "RESPTests",
            dependencies: [
                "RESP", "RESPTesting",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "TokenGateCoreTests",
            dependencies: [
                "TokenGateCore", "JOSE", "OpenSSLPrimitives", "TokenGateCoreTesting", "YAML",
                // The spans a request makes, recorded in memory.
                .product(name: "InMemoryTracing", package: "swift-distributed-tracing"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "StaticKeySignerTests",
            dependencies: [
                "StaticKeySigner", "TokenBackendConformance", "TokenGateCore", "JOSE", "TokenGateTesting",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "UpstreamTokenServerTests",
            dependencies: [
                "UpstreamTokenServer", "TokenBackendConformance", "TokenGateCore", "TokenGateHTTP", "TokenGateTesting", "JOSE", "OpenSSLPrimitives",
                "OutboundHTTP", "TokenGateOutbound",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // The google-iam backend through the real gateway, against the Google stand-in (Tests/Peers/google); and every
        // backend's tokens used at the Fleet Engine stand-in (Tests/Peers/fleetengine), a tenant's old token server
        // served by Hummingbird on loopback.
        .testTarget(
            name: "GoogleIAMSignerTests",
            dependencies: [
                "GoogleIAMSigner", "StaticKeySigner", "UpstreamTokenServer", "FileTokenSource", "TokenBackendConformance", "GoogleAuth",
                "TokenGateCore", "TokenGateHTTP", "TokenGateTesting", "TokenGateOutbound", "JOSE", "OpenSSLPrimitives",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "FileTokenSourceTests",
            dependencies: [
                "FileTokenSource", "TokenBackendConformance", "TokenGateCore", "JOSE", "TokenGateTesting",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "TokenGateHTTPTests",
            dependencies: [
                "TokenGateHTTP", "TokenGateOutbound", "TokenGateTesting", "TokenGateCore", "StaticKeySigner", "JOSE", "OpenSSLPrimitives",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                // A tenant's authorizer, served for real on loopback.
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                // The event loop's answer to a cached hit, driven on an EmbeddedChannel.
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
            ],
            swiftSettings: swiftSettings
        ),
        // Several gateway replicas on one real redis-server, started by the tests.
        .testTarget(
            name: "TokenGateScaleOutTests",
            dependencies: [
                "TokenGateCore", "TokenGateTesting", "TokenGateRedis", "RESP", "JOSE", "OpenSSLPrimitives",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "TokenGateCLITests", dependencies: ["tokengate", "JOSE", "OpenSSLPrimitives", "TokenGateTesting"], swiftSettings: swiftSettings),
        .testTarget(
            name: "TokenGateClientIntegrationTests",
            dependencies: [
                .product(name: "TokenGateClient", package: "Client"),
                "TokenGateTesting", "TokenGateCore", "StaticKeySigner", "JOSE", "OpenSSLPrimitives",
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
