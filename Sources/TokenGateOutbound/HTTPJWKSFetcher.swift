package import AsyncHTTPClient
import NIOHTTP1
import OutboundHTTP
import TokenGateCore

/// The one way TokenGate fetches a JWKS over the network, for every `RemoteKeySet` (session-token keys and backend
/// keys alike), one attempt through the one outbound exchange (``RetryingExchange``): a deadline per fetch (5 s),
/// body included, a 512 KiB body cap, no redirects (the keys must come from the URL configured; a 3xx is a failed
/// fetch). Retries are the key set's refresher's job.
package struct HTTPJWKSFetcher: JWKSFetcher {
    /// The deadline of one fetch, connection and body included.
    package static let defaultTimeout = Duration.seconds(5)
    /// The largest JWKS accepted; real ones are a few KiB.
    package static let maxBodyBytes = 512 * 1024

    let client: HTTPClient
    let timeout: Duration

    /// A fetcher over `client`, which its owner shuts down.
    package init(client: HTTPClient, timeout: Duration = defaultTimeout) {
        self.client = client
        self.timeout = timeout
    }

    package func fetchJWKS(from url: String) async throws -> [UInt8] {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Accept", value: "application/json")
        // One attempt: the refresher decides when to ask again. Only a 200's body is read.
        let exchange = RetryingExchange(client: client, retries: .once, maxBodyBytes: Self.maxBodyBytes, readsBody: { $0 == 200 })
        return try await exchange.run(
            request,
            deadline: .now + timeout,
            expired: { JWKSFetchFailure(description: describe(.timedOut)) },
            classify: { outcome, _ in
                switch outcome {
                case .success(let response) where response.status == 200: .done(response.body)
                case .success(let response): .fail(JWKSFetchFailure(description: "the key server answered HTTP \(response.status)"))
                case .failure(let failure): .fail(JWKSFetchFailure(description: describe(failure)))
                }
            })
    }

    func describe(_ failure: OutboundExchange.Failure) -> String {
        switch failure {
        case .timedOut: "the key server did not answer within \(timeout)"
        case .unreachable(let reason): "the key server could not be reached (\(reason))"
        case .redirected: "the key server redirected and the client followed; redirects are never used"
        case .bodyTimedOut: "the key server did not send its keys within \(timeout)"
        case .bodyTooLarge(let limit): "the key server sent more than \(limit) bytes"
        case .bodyBroken(let reason): "the key server sent a broken answer (\(reason))"
        }
    }
}

/// A fetch that got no JWKS document.
struct JWKSFetchFailure: Error, CustomStringConvertible {
    let description: String
}
