import AsyncHTTPClient
import JOSE
import Logging
import NIOCore
import NIOHTTP1
import TokenGateCore

/// Calls the provider's token server: builds the request, retries what is worth retrying, and keeps the whole
/// call inside the total timeout.
struct UpstreamCaller: Sendable {
    let client: HTTPClient
    let settings: UpstreamSettings
    let timing: UpstreamTiming
    var metrics: BackendMetrics = .none

    /// The body of the upstream's 2xx answer for `request`, or the `TokenGateError` to report.
    func fetchBody(for request: TokenRequest) async throws -> [UInt8] {
        guard let url = settings.url.url(for: request) else {
            throw TokenGateError(.invalidRequest, "a context ID made only of dots cannot travel in a URL path")
        }
        let httpRequest = makeRequest(url: url, for: request)
        let deadline = ContinuousClock.now + settings.totalTimeout
        var attempt = 0
        while true {
            attempt += 1
            let now = ContinuousClock.now
            guard now < deadline else { throw TokenGateError(.backendTimeout, "the upstream token server did not answer in time") }
            let outcome = await HTTPExchange.attempt(
                httpRequest,
                client: client,
                headDeadline: min(deadline, now + settings.connectTimeout),
                deadline: deadline,
                maxBodyBytes: settings.maxBodyBytes,
                what: "the upstream token server"
            )
            switch outcome {
            case .body(let bytes):
                return bytes
            case .final(let error):
                throw error
            case .retryable(let error, let retryAfter):
                guard attempt < settings.retries.maxAttempts else { throw error }
                let delay = settings.retries.backoff(
                    beforeRetry: attempt,
                    jitter: timing.jitter(),
                    retryAfter: retryAfter.map { .seconds($0) }
                )
                // A wait that would end past the deadline is pointless: report now, with Retry-After if known.
                guard ContinuousClock.now + delay < deadline else { throw error }
                metrics.recordRetry()
                try await timing.sleep(delay)
            }
        }
    }

    func makeRequest(url: String, for request: TokenRequest) -> HTTPClientRequest {
        var httpRequest = HTTPClientRequest(url: url)
        httpRequest.headers.add(name: "Accept", value: "application/json")
        httpRequest.headers.add(name: "User-Agent", value: "TokenGate")
        for header in settings.headers { httpRequest.headers.add(name: header.name, value: header.value) }
        switch settings.method {
        case .get:
            httpRequest.method = .GET
        case .post:
            httpRequest.method = .POST
            httpRequest.headers.add(name: "Content-Type", value: "application/json")
            httpRequest.body = .bytes(ByteBuffer(bytes: Self.postBody(for: request)))
        }
        return httpRequest
    }

    /// `{"providerId":…,"tokenType":…,"context":{"tripId":…}}`; `taskIds` is an array, a whole fleet `{}`.
    static func postBody(for request: TokenRequest) -> [UInt8] {
        var body = JSONObject()
        body["providerId"] = .string(request.provider.rawValue)
        body["tokenType"] = .string(request.type.rawValue)
        body["context"] = .object(request.context.jsonObject)
        return JSON.serialize(.object(body))
    }
}
