package import AsyncHTTPClient
package import NIOCore
import NIOHTTP1
import TokenGateCore

/// The one way TokenGate fetches a JWKS over the network, for every ``RemoteKeySet`` (session-token keys and
/// backend keys alike): AsyncHTTPClient, a 5 s deadline per fetch, a 512 KiB body cap, no redirects (the keys must
/// come from the URL configured; a 3xx is a failed fetch). Retries are the key set's refresher's job.
package struct HTTPJWKSFetcher: JWKSFetcher {
    /// The deadline of one fetch, connection included.
    package static let timeout: TimeAmount = .seconds(5)
    /// The largest JWKS accepted; real ones are a few KiB.
    package static let maxBodyBytes = 512 * 1024

    let client: HTTPClient

    /// A fetcher over `client`, which its owner shuts down.
    package init(client: HTTPClient) {
        self.client = client
    }

    package func fetchJWKS(from url: String) async throws -> [UInt8] {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Accept", value: "application/json")
        let response = try await client.execute(request, timeout: Self.timeout)
        guard response.status == .ok else {
            throw JWKSFetchFailure(description: "the key server answered HTTP \(response.status.code)")
        }
        let body = try await response.body.collect(upTo: Self.maxBodyBytes)
        return Array(buffer: body)
    }
}

/// A fetch that got an answer, but not a JWKS document.
struct JWKSFetchFailure: Error, CustomStringConvertible {
    let description: String
}
