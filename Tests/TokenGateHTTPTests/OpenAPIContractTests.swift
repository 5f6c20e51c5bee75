import Foundation
import JOSE
import Testing
import TokenGateCore
import TokenGateHTTP
import TokenGateTesting

/// The OpenAPI document: checked in, served on the admin listener, valid OpenAPI 3.1 by an independent validator,
/// in agreement with both routers, and honoured by the running gateway as schemathesis (an independent,
/// property-based API tester) sees it.
@Suite(.timeLimit(.minutes(15))) struct OpenAPIContractTests {
    static let checkedIn = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appending(path: "Sources/TokenGateHTTP/OpenAPI/openapi.json")

    /// Every (path, method) the document declares, and whether it is an admin operation.
    static func operations(_ document: JSONValue) -> [String: Bool] {
        var operations: [String: Bool] = [:]
        for (path, item) in document.objectValue?["paths"]?.objectValue ?? JSONObject() {
            for (method, operation) in item.objectValue ?? JSONObject() where method != "parameters" {
                let tags = operation.objectValue?["tags"]?.arrayValue?.compactMap(\.stringValue) ?? []
                operations["\(method.uppercased()) \(path)"] = tags.contains("admin")
            }
        }
        return operations
    }

    @Test func theCheckedInCopyIsTheDocumentTheGatewayServes() throws {
        let onDisk = try JSON.parse(Array(try Data(contentsOf: Self.checkedIn)))
        #expect(
            onDisk == OpenAPIDocument.json,
            "Sources/TokenGateHTTP/OpenAPI/openapi.json is stale: regenerate it with `curl -s http://127.0.0.1:9464/openapi.json | python3 -m json.tool --indent 2`"
        )
    }

    @Test func everyDocumentedRouteExistsAndEveryRouteIsDocumented() {
        let documented = Self.operations(OpenAPIDocument.json)
        let publicRoutes = Set(GatewayApplication.publicRoutes.flatMap { route in route.methods.map { "\($0) \(route.path)" } })
        let adminRoutes = Set(GatewayApplication.adminRoutes.flatMap { route in route.methods.map { "\($0) \(route.path)" } })
        #expect(Set(documented.keys) == publicRoutes.union(adminRoutes))
        for (operation, isAdmin) in documented {
            if isAdmin {
                #expect(adminRoutes.contains(operation) && !publicRoutes.contains(operation), "\(operation) is admin-only")
            } else {
                #expect(publicRoutes.contains(operation), "\(operation) is on the public listener")
            }
        }
        // Every error code appears in some response.
        let text = String(decoding: OpenAPIDocument.bytes, as: UTF8.self)
        for code in TokenGateError.Code.allCases { #expect(text.contains("\"\(code.rawValue)\""), "\(code)") }
    }

    @Test func theServedDocumentIsValidOpenAPIAndSchemathesisFindsNoFailure() async throws {
        // Generous failed-authentication limits: schemathesis sends many requests without a valid credential.
        let fixture = try GatewayFixture(
            rateLimits: "{ failedAuth: { rate: 100000/min, burst: 100000 }, failedAuthPerPeer: { rate: 100000/min, burst: 100000 } }")
        try await fixture.withGateway { gateway in
            let served = try await RunningGateway.Endpoint(baseURL: gateway.adminURL).get("/openapi.json")
            #expect(served.status == 200)
            let path = try fixture.directory.write("openapi.json", served.body)

            let validation = try await ChildProcess.run(
                "python3", ["-c", "import json, sys; from openapi_spec_validator import validate; validate(json.load(open(sys.argv[1])))", path])
            #expect(validation.status == 0, "openapi-spec-validator: \(validation.output)")

            // Two checks are left out, each for a documented design choice: positive-data acceptance (a well-formed
            // but unconfigured provider ID is a valid request that rightly answers 404) and missing-required-header
            // (the cheap checks of provider, type and context IDs come before any credential work, so a request
            // that is malformed and lacks a credential is 400, not 401; docs/http-api.md, "Order of checks"). Every other
            // check runs: no 5xx, status codes, content types, headers and bodies as documented, unsupported
            // methods, authentication enforced (ignored_auth). An answer may take a minute: the gateway answers each
            // at once, but beside the rest of the suite on two cores schemathesis' own process was starved past 10 s.
            // Each run is bounded by its examples (-n) and timeouts; on such a machine the two took 350 s in all,
            // past the five minutes this suite once had, hence its fifteen.
            let common = [
                "-m", "schemathesis.cli", "run", path, "-n", "15", "--seed", "20261122", "--checks", "all",
                "--exclude-checks", "positive_data_acceptance,missing_required_header", "--no-color", "--request-timeout", "60",
                "--max-response-time", "60",
                "--max-failures", "5",
            ]
            let publicRun = try await ChildProcess.run(
                "python3",
                common + [
                    "--url", gateway.baseURL, "--include-tag", "tokens", "--include-tag", "health",
                    "-H", "Authorization: Bearer \(GatewayFixture.apiKey)",
                ])
            #expect(publicRun.status == 0, "schemathesis (public listener):\n\(publicRun.output)")
            let adminRun = try await ChildProcess.run("python3", common + ["--url", gateway.adminURL, "--include-tag", "admin"])
            #expect(adminRun.status == 0, "schemathesis (admin listener):\n\(adminRun.output)")
        }
    }
}
