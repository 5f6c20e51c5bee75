import Foundation
import TokenGateClient

/// A hand-driven clock: `sleep` records the duration and advances `now` without suspending for real.
final class ManualClock: TokenClock, @unchecked Sendable {  // every field is guarded by `lock`
    private let lock = NSLock()
    private var current: Date
    private var recorded: [TimeInterval] = []

    init(_ start: Date = Date(timeIntervalSince1970: 1_763_750_000)) { current = start }

    var now: Date { lock.withLock { current } }
    var sleeps: [TimeInterval] { lock.withLock { recorded } }

    func sleep(for seconds: TimeInterval) async throws {
        lock.withLock {
            recorded.append(seconds)
            current += seconds
        }
    }

    func advance(by seconds: TimeInterval) { lock.withLock { current += seconds } }
}

/// An in-memory gateway: answers request number `n` (0-based) with `respond(n, request)` and records requests.
final class TestTransport: HTTPTransport, @unchecked Sendable {  // `recorded` is guarded by `lock`
    typealias Responder = @Sendable (Int, HTTPTransportRequest) async throws -> HTTPTransportResponse

    private let lock = NSLock()
    private var recorded: [HTTPTransportRequest] = []
    private let respond: Responder
    /// Yields each request's index as it arrives, so a test can wait for a fetch to be in flight.
    let arrivals: AsyncStream<Int>
    private let arrival: AsyncStream<Int>.Continuation

    init(_ respond: @escaping Responder) {
        self.respond = respond
        (arrivals, arrival) = AsyncStream.makeStream(of: Int.self)
    }

    var requests: [HTTPTransportRequest] { lock.withLock { recorded } }
    var count: Int { lock.withLock { recorded.count } }

    func send(_ request: HTTPTransportRequest) async throws -> HTTPTransportResponse {
        let index = lock.withLock {
            recorded.append(request)
            return recorded.count - 1
        }
        arrival.yield(index)
        return try await respond(index, request)
    }

    /// Suspends until request `index` has arrived.
    func waitForRequest(_ index: Int) async {
        for await arrived in arrivals where arrived >= index { return }
    }
}

/// A one-shot latch: `wait()` suspends until `open()`.
actor Gate {
    private var isOpen = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    func wait() async {
        if isOpen { return }
        await withCheckedContinuation { waiters.append($0) }
    }

    func open() {
        isOpen = true
        for waiter in waiters { waiter.resume() }
        waiters.removeAll()
    }
}

struct NetworkDown: Error {}

/// A thread-safe counter, for credential sources that answer differently on each call.
final class Counter: @unchecked Sendable {  // `count` is guarded by `lock`
    private let lock = NSLock()
    private var count = 0

    /// Adds one and returns the new count (1 on the first call).
    @discardableResult
    func increment() -> Int {
        lock.withLock {
            count += 1
            return count
        }
    }

    var value: Int { lock.withLock { count } }
}

enum Fixtures {
    static let baseURL = URL(string: "http://127.0.0.1:8080")!

    static func configuration(
        format: TokenResponseFormat = .tokenGate, maximumContexts: Int = 4,
        retryPolicy: RetryPolicy = RetryPolicy(jitter: 0)
    ) -> TokenProvider.Configuration {
        TokenProvider.Configuration(
            baseURL: baseURL, providerID: "acme-rides", responseFormat: format, maximumContexts: maximumContexts,
            retryPolicy: retryPolicy)
    }

    static func provider(
        _ transport: TestTransport, clock: ManualClock, format: TokenResponseFormat = .tokenGate,
        maximumContexts: Int = 4, retryPolicy: RetryPolicy = RetryPolicy(jitter: 0)
    ) -> TokenProvider {
        TokenProvider(
            configuration: configuration(format: format, maximumContexts: maximumContexts, retryPolicy: retryPolicy),
            transport: transport, clock: clock
        ) { "s3cret-session" }
    }

    static func json(_ object: [String: Any]) -> Data {
        try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    }

    /// TokenGate's default body for a token issued at `now` with a one-hour life and a 10-minute refresh lead.
    static func tokenGateBody(_ token: String, now: Date, lifetime: TimeInterval = 3600) -> HTTPTransportResponse {
        let issuedAt = now.timeIntervalSince1970.rounded()
        let body = json([
            "token": token, "tokenType": "consumer", "providerId": "acme-rides",
            "issuedAt": issuedAt, "expiresAt": issuedAt + lifetime, "expiresIn": lifetime,
            "refreshAfter": issuedAt + lifetime - 600,
        ])
        return HTTPTransportResponse(status: 200, headers: ["Cache-Control": "no-store"], body: body)
    }

    /// A gateway that mints `token-1`, `token-2`, … on the clock's time.
    static func mintingTransport(clock: ManualClock) -> TestTransport {
        TestTransport { index, _ in tokenGateBody("token-\(index + 1)", now: clock.now) }
    }

    static func errorResponse(
        _ status: Int, code: String, headers: [String: String] = [:]
    ) -> HTTPTransportResponse {
        let body = json(["error": ["code": code, "message": "Gateway says \(code)."]])
        return HTTPTransportResponse(status: status, headers: headers, body: body)
    }

    /// An unsigned compact JWS whose payload carries `exp` (the client only decodes it).
    static func jwt(exp: TimeInterval) -> String {
        func encode(_ object: [String: Any]) -> String {
            json(object).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        return encode(["alg": "RS256", "typ": "JWT"]) + "."
            + encode(["iss": "sa@acme", "exp": exp, "authorization": ["tripid": "trip-42"]]) + ".c2ln"
    }
}
