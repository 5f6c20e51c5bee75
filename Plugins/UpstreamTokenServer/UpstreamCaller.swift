import AsyncHTTPClient
import JOSE
import Logging
import NIOCore
import NIOHTTP1
import OutboundHTTP
import TokenGateCore

/// Calls the provider's token server through the one retrying exchange (``RetryingExchange``): builds the request,
/// retries what ``classify(_:_:what:)`` says is worth retrying (`retries:`), bounds each attempt's connecting and head
/// by `timeouts.connect`, and keeps the whole call, body included, inside `timeouts.total`.
struct UpstreamCaller: Sendable {
    let client: HTTPClient
    let settings: UpstreamSettings
    let timing: RetryTiming
    var metrics: BackendMetrics = .none

    /// The body of the upstream's 2xx answer for `request`, or the `TokenGateError` to report.
    func fetchBody(for request: TokenRequest) async throws -> [UInt8] {
        guard let url = settings.url.url(for: request) else {
            throw TokenGateError(.invalidRequest, "a context ID made only of dots cannot travel in a URL path")
        }
        let httpRequest = makeRequest(url: url, for: request)
        let exchange = RetryingExchange(
            client: client, retries: settings.retries, attemptTimeout: settings.connectTimeout, maxBodyBytes: settings.maxBodyBytes,
            readsBody: { (200..<300).contains($0) }, timing: timing)
        let metrics = self.metrics
        return try await exchange.run(
            httpRequest,
            deadline: ContinuousClock.now + settings.totalTimeout,
            expired: { TokenGateError(.backendTimeout, "the upstream token server did not answer in time") as any Error },
            // A cancelled wait ends the call as the cancellation it is (not a failure of the upstream).
            cancelledWait: CancellationError(),
            observe: { event in
                if case .retrying = event { metrics.recordRetry() }
            },
            classify: { outcome, attempt in Self.classify(outcome, attempt, what: "the upstream token server") }
        )
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
