import Foundation
import JOSE
import Testing
import TokenGateCore
import TokenGateTesting

/// Both doors of the token endpoint give the same answer: a corpus of requests goes, in the same order, to two
/// gateways running one configuration, one with `server.fastPath` on (the event loop answers hits, refusals and
/// mints) and one with it off (Hummingbird's router answers everything), and each pair of answers must be the same
/// bytes: status line, header fields in order, body.
///
/// Only what legitimately differs between two answers is normalised, each explicitly (``normalised(_:requestID:)``):
/// - `Date`: the wall clock of the moment the answer was written (the gateways' own clock is the fixture's, shared).
/// - a generated `X-Request-ID` (the request sent none, or one not well-formed): the process-wide counter gives each
///   gateway's answer the next number, so the two are distinct by design; its length is kept.
/// - the compact token in a token body: each gateway mints its own token for the same context (their caches are
///   separate), and a signature need not be the same twice; the rest of the body (the times, from the shared
///   clock) and the token's length are kept.
///
/// Run with `TOKENGATE_TEST_FAST_PATH=off`, both gateways are the router, and the test still holds.
@Suite struct TokenAnswerContractTests {
    static let provider = "/v1/providers/acme-rides"
    static func trip(_ id: String) -> String { "\(provider)/tokens/consumer?tripId=\(id)" }

    /// One request's text: `id` is its `X-Request-ID` (none when nil), `key` its bearer credential.
    static func request(
        _ method: String = "GET", _ target: String, key: String? = GatewayFixture.apiKey, id: String?, fields: [String] = []
    ) -> String {
        var lines = ["\(method) \(target) HTTP/1.1", "Host: 127.0.0.1"]
        if let id { lines.append("X-Request-ID: \(id)") }
        if let key { lines.append("Authorization: Bearer \(key)") }
        return (lines + fields).joined(separator: "\r\n") + "\r\n\r\n"
    }

    /// The answer's text with what may differ between the doors replaced (see the suite's comment). `requestID`
    /// is the well-formed ID the request sent, or nil when the gateway generated the answer's.
    static func normalised(_ bytes: [UInt8], requestID: String?) -> String {
        let text = String(decoding: bytes, as: UTF8.self)
        guard let end = text.range(of: "\r\n\r\n") else { return text }
        let head = text[..<end.lowerBound].components(separatedBy: "\r\n").map { line -> String in
            let name = line.prefix { $0 != ":" }.lowercased()
            let value = line.drop { $0 != ":" }.dropFirst().trimmingCharacters(in: .whitespaces)
            switch name {
            case "date": return "Date: <the moment>"
            case "x-request-id" where requestID == nil: return "X-Request-ID: <generated, \(value.count) characters>"
            default: return line
            }
        }
        let body = String(text[end.upperBound...])
        let tokens = body.replacing(compactToken) { "<a token of \(body[$0.range].utf8.count) bytes>" }
        return head.joined(separator: "\r\n") + "\r\n\r\n" + tokens
    }

    /// Three base64url segments, the first a JOSE header (`{"` is `ey`).
    static var compactToken: Regex<AnyRegexOutput> { try! Regex(#"ey[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+"#) }

    /// The two gateways and a connection to each.
    struct Doors {
        let fast: RunningGateway
        let router: RunningGateway
        let fastConnection: RawConnection
        let routerConnection: RawConnection
        var statuses: [Int] = []

        enum Reading { case response, headOnly, untilClosed }

        /// Sends `request` through both doors (the fast path's first) and expects the same answer, with `status`.
        mutating func exchange(
            _ name: String, _ request: String, requestID: String?, status: Int, reading: Reading = .response,
            sourceLocation: SourceLocation = #_sourceLocation
        ) async throws {
            var answers: [String] = []
            for door in [fast, router] {
                let bytes: [UInt8]
                switch reading {
                case .response, .headOnly:
                    let connection = door.port == fast.port ? fastConnection : routerConnection
                    try await connection.send(request)
                    let answer = try await reading == .response ? connection.readResponse() : connection.readHeadOnly()
                    bytes = try #require(answer, "\(name): no answer", sourceLocation: sourceLocation).bytes
                case .untilClosed:
                    let connection = try await RawConnection.open(port: door.port)
                    try await connection.send(request)
                    let drained = try await connection.drain()
                    #expect(drained.closed, "\(name): the connection stays open", sourceLocation: sourceLocation)
                    bytes = drained.bytes
                }
                answers.append(TokenAnswerContractTests.normalised(bytes, requestID: requestID))
            }
            #expect(answers[0].hasPrefix("HTTP/1.1 \(status) "), "\(name): \(answers[0])", sourceLocation: sourceLocation)
            #expect(answers[0] == answers[1], "\(name): the doors' answers differ", sourceLocation: sourceLocation)
            statuses.append(status)
        }

        /// Runs `step` against each gateway's admin listener.
        func onBoth(_ step: (RunningGateway.Endpoint) async throws -> Void) async throws {
            for door in [fast, router] { try await step(RunningGateway.Endpoint(baseURL: door.adminURL)) }
        }
    }

    @Test func aCorpusOfRequestsIsAnsweredByteForByteTheSameThroughBothDoors() async throws {
        let fixture = try GatewayFixture(
            rateLimits: "{ context: { rate: 1/h, burst: 2 } }", cors: "{ allowedOrigins: [http://localhost:3000] }")
        // The router's gateway runs the same file with the fast path off: the same keys, the same clock.
        try fixture.directory.write("config-router.yaml", "server: { fastPath: false }\n" + (try fixture.configText()))
        try await fixture.withGateway { fast in
            try await RunningGateway.with(
                configuration: "\(fixture.directory.path)/config-router.yaml", registry: fixture.registry, clock: fixture.clock.gatewayClock
            ) { router in
                var doors = Doors(
                    fast: fast, router: router, fastConnection: try await RawConnection.open(port: fast.port),
                    routerConnection: try await RawConnection.open(port: router.port))
                try await Self.run(&doors, fixture: fixture)
                // Every kind of answer the corpus claims was there.
                #expect(Set(doors.statuses).isSuperset(of: [200, 204, 400, 401, 403, 404, 405, 410, 429, 503]))
                // And the fast door was the event loop's: its mints were signed there, the router's in request tasks.
                if ProcessInfo.processInfo.environment["TOKENGATE_TEST_FAST_PATH"] != "off" {
                    #expect(fixture.probe.signedOnEventLoops.contains(true) && fixture.probe.signedOnEventLoops.contains(false))
                }
            }
        }
    }

    static func run(_ doors: inout Doors, fixture: GatewayFixture) async throws {
        // Tokens: a miss (minted), a hit, with a request ID, without one, with a malformed one.
        try await doors.exchange("a miss", Self.request("GET", Self.trip("trip-1"), id: "c-1"), requestID: "c-1", status: 200)
        try await doors.exchange("a hit", Self.request("GET", Self.trip("trip-1"), id: "c-2"), requestID: "c-2", status: 200)
        try await doors.exchange("a miss, no request ID", Self.request("GET", Self.trip("trip-2"), id: nil), requestID: nil, status: 200)
        try await doors.exchange(
            "a hit, a malformed request ID", Self.request("GET", Self.trip("trip-2"), id: "not well formed!"), requestID: nil, status: 200)
        // The context's burst is two: the third is refused with the limits' fields.
        try await doors.exchange("429", Self.request("GET", Self.trip("trip-1"), id: "c-3"), requestID: "c-3", status: 429)
        // Credentials.
        try await doors.exchange("401, no credential", Self.request("GET", Self.trip("trip-5"), key: nil, id: "c-4"), requestID: "c-4", status: 401)
        try await doors.exchange(
            "401, a wrong key", Self.request("GET", Self.trip("trip-5"), key: "not-a-key-of-anyone-0123456789", id: "c-5"), requestID: "c-5",
            status: 401)
        try await doors.exchange(
            "401, a revoked key", Self.request("GET", Self.trip("trip-5"), key: GatewayFixture.revokedKey, id: "c-6"), requestID: "c-6", status: 401)
        try await doors.exchange(
            "403, another tenant's key", Self.request("GET", Self.trip("trip-5"), key: GatewayFixture.otherTenantKey, id: "c-7"), requestID: "c-7",
            status: 403)
        let session = try fixture.sessionToken(claims: ["trips": .array([.string("trip-42")])])
        try await doors.exchange(
            "403, a trip the session does not name", Self.request("GET", Self.trip("trip-99"), key: session, id: "c-8"), requestID: "c-8", status: 403
        )
        try await doors.exchange(
            "a session's own trip", Self.request("GET", Self.trip("trip-42"), key: session, id: "c-9"), requestID: "c-9", status: 200)
        // invalid_request, each way.
        let invalid = [
            ("no trip ID", "\(provider)/tokens/consumer"),
            ("a trip ID that is not UTF-8", Self.trip("%FF")),
            ("a repeated parameter", Self.trip("a&tripId=b")),
            ("an empty trip ID", Self.trip("")),
            ("too many parameters", Self.trip("t") + String(repeating: "&x=1", count: 9)),
            ("a URL over the limit", Self.trip("t&pad=" + String(repeating: "a", count: 2100))),
            ("a driver token with a trip ID", "\(provider)/tokens/driver?tripId=trip-1"),
        ]
        for (index, (name, target)) in invalid.enumerated() {
            try await doors.exchange("400, \(name)", Self.request("GET", target, id: "i-\(index)"), requestID: "i-\(index)", status: 400)
        }
        let longKey = String(repeating: "k", count: 9000)
        try await doors.exchange(
            "400, an Authorization over the limit", Self.request("GET", Self.trip("trip-5"), key: longKey, id: "i-long"), requestID: "i-long",
            status: 400)
        // Not found, both kinds, and what only the router routes (an escaped segment, an unknown token type).
        try await doors.exchange(
            "404, an unknown provider", Self.request("GET", "/v1/providers/nobody/tokens/consumer?tripId=trip-1", id: "n-1"), requestID: "n-1",
            status: 404)
        try await doors.exchange("404, no route", Self.request("GET", "/v2/nothing/here", id: "n-2"), requestID: "n-2", status: 404)
        try await doors.exchange(
            "404, an unknown token type", Self.request("GET", "\(provider)/tokens/teleporter?tripId=trip-1", id: "n-3"), requestID: "n-3",
            status: 404)
        try await doors.exchange(
            "404, an escaped provider segment", Self.request("GET", "/v1/providers/acme%2Drides/tokens/consumer?tripId=trip-2", id: "n-4"),
            requestID: "n-4", status: 404)
        // Methods.
        try await doors.exchange("405, POST", Self.request("POST", Self.trip("trip-1"), id: "m-1"), requestID: "m-1", status: 405)
        try await doors.exchange("405, HEAD", Self.request("HEAD", Self.trip("trip-1"), id: "m-2"), requestID: "m-2", status: 405, reading: .headOnly)
        // 503: the backend fails the mint.
        fixture.probe.failAlways()
        try await doors.exchange("503", Self.request("GET", Self.trip("trip-fails"), id: "u-1"), requestID: "u-1", status: 503)
        fixture.probe.failNext(0)
        // 410: an ended trip.
        try await doors.onBoth { admin in
            let ended = try await admin.request(
                "POST", "/admin/v1/providers/acme-rides/contexts/consumer/trip-3/end", bearer: GatewayFixture.acmeAdminKey)
            #expect(ended.status == 200)
        }
        try await doors.exchange("410", Self.request("GET", Self.trip("trip-3"), id: "e-1"), requestID: "e-1", status: 410)
        // CORS: preflights, and a browser's GET from a listed origin and from another.
        let preflight = ["Origin: http://localhost:3000", "Access-Control-Request-Method: GET"]
        try await doors.exchange(
            "a preflight", Self.request("OPTIONS", Self.trip("trip-4"), key: nil, id: "o-1", fields: preflight), requestID: "o-1", status: 204)
        try await doors.exchange(
            "403, a preflight from an unlisted origin",
            Self.request(
                "OPTIONS", Self.trip("trip-4"), key: nil, id: "o-2", fields: ["Origin: https://evil.test", "Access-Control-Request-Method: GET"]),
            requestID: "o-2", status: 403)
        try await doors.exchange(
            "an OPTIONS that is no preflight", Self.request("OPTIONS", Self.trip("trip-4"), key: nil, id: "o-3"), requestID: "o-3", status: 204)
        try await doors.exchange(
            "a browser's miss", Self.request("GET", Self.trip("trip-4"), id: "o-4", fields: ["Origin: http://localhost:3000"]), requestID: "o-4",
            status: 200)
        try await doors.exchange(
            "a browser's hit", Self.request("GET", Self.trip("trip-4"), id: "o-5", fields: ["Origin: http://localhost:3000"]), requestID: "o-5",
            status: 200)
        try await doors.exchange(
            "a refusal to a browser", Self.request("GET", Self.trip("trip-4"), key: nil, id: "o-6", fields: ["Origin: http://localhost:3000"]),
            requestID: "o-6", status: 401)
        try await doors.exchange(
            "an unlisted origin's GET", Self.request("GET", Self.trip("trip-6"), id: "o-7", fields: ["Origin: https://evil.test"]), requestID: "o-7",
            status: 200)
        // Google's sample routes.
        try await doors.exchange(
            "a sample consumer token", Self.request("GET", "\(provider)/samples/token/consumer/trip-7", id: "g-1"), requestID: "g-1", status: 200)
        try await doors.exchange(
            "a sample consumer token again", Self.request("GET", "\(provider)/samples/token/consumer/trip-7", id: "g-2"), requestID: "g-2",
            status: 200)
        try await doors.exchange(
            "a sample delivery token", Self.request("GET", "\(provider)/samples/token/delivery_driver/van-1", id: "g-3"), requestID: "g-3",
            status: 200)
        try await doors.exchange(
            "a sample route without its ID", Self.request("GET", "\(provider)/samples/token/consumer", id: "g-4"), requestID: "g-4", status: 400)
        try await doors.exchange(
            "an unknown sample type", Self.request("GET", "\(provider)/samples/token/nope/x", id: "g-5"), requestID: "g-5", status: 404)
        // The rest of the public listener, and a hit on a connection the client closes.
        try await doors.exchange("healthz", Self.request("GET", "/healthz", key: nil, id: "h-1"), requestID: "h-1", status: 200)
        try await doors.exchange(
            "a hit with Connection: close", Self.request("GET", Self.trip("trip-2"), id: "x-1", fields: ["Connection: close"]), requestID: "x-1",
            status: 429, reading: .untilClosed)
        try await doors.exchange(
            "a hit with Connection: close", Self.request("GET", Self.trip("trip-6"), id: "x-2", fields: ["Connection: close"]), requestID: "x-2",
            status: 200, reading: .untilClosed)
    }
}
