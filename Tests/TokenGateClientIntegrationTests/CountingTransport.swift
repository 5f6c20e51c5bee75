import Foundation
import Synchronization
import TokenGateClient

/// The client's real URLSession transport, counting the HTTP requests that reach the gateway: the gateway caches
/// too, so only this count shows what the client itself reused.
final class CountingTransport: HTTPTransport {
    private struct State {
        var requests: [HTTPTransportRequest] = []
        var completed = 0
        var waiters: [(count: Int, continuation: CheckedContinuation<Void, Never>)] = []
    }

    private let inner: any HTTPTransport
    private let state = Mutex(State())

    init(_ inner: any HTTPTransport = URLSessionTransport(timeout: 30)) {
        self.inner = inner
    }

    /// Requests sent so far (finished or not).
    var requestCount: Int { state.withLock { $0.requests.count } }

    /// The query of every request sent, in order, e.g. `tripId=trip-a`.
    var queries: [String] { state.withLock { $0.requests.map { $0.url.query ?? "" } } }

    func send(_ request: HTTPTransportRequest) async throws -> HTTPTransportResponse {
        state.withLock { $0.requests.append(request) }
        defer { complete() }
        return try await inner.send(request)
    }

    /// Returns once `count` requests have had their answer (or failed); the test's time limit bounds the wait.
    func waitForResponses(_ count: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let isDone = state.withLock { state in
                guard state.completed < count else { return true }
                state.waiters.append((count, continuation))
                return false
            }
            if isDone { continuation.resume() }
        }
    }

    private func complete() {
        let ready = state.withLock { state in
            state.completed += 1
            let completed = state.completed
            let ready = state.waiters.filter { $0.count <= completed }
            state.waiters.removeAll { $0.count <= completed }
            return ready.map(\.continuation)
        }
        for continuation in ready { continuation.resume() }
    }
}
