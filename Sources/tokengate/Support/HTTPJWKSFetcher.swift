import AsyncHTTPClient
import NIOCore
import NIOHTTP1
import TokenGateCore

/// Fetches the JWKS of `jwksUrl:` clients for `serve`, over AsyncHTTPClient: a 5 s deadline per fetch, a 512 KiB
/// body cap, and no redirects (the keys must come from the URL configured; a 3xx is a failed fetch). Retries are
/// the ``SessionKeyRefresher``'s job, so a failure is simply thrown.
struct HTTPJWKSFetcher: JWKSFetcher {
    /// The deadline of one fetch, connection included.
    static let timeout: TimeAmount = .seconds(5)
    /// The largest JWKS accepted; real ones are a few KiB.
    static let maxBodyBytes = 512 * 1024

    /// One client for the process, never shut down (it lives as long as `serve`): redirects disallowed, a 2 s
    /// connect timeout.
    static let sharedClient = HTTPClient(
        eventLoopGroup: HTTPClient.defaultEventLoopGroup,
        configuration: HTTPClient.Configuration(
            redirectConfiguration: .disallow,
            timeout: HTTPClient.Configuration.Timeout(connect: .seconds(2))
        )
    )

    let client: HTTPClient

    init(client: HTTPClient = Self.sharedClient) {
        self.client = client
    }

    func fetchJWKS(from url: String) async throws -> [UInt8] {
        var request = HTTPClientRequest(url: url)
        request.headers.add(name: "Accept", value: "application/json")
        let response = try await client.execute(request, timeout: Self.timeout)
        guard response.status == .ok else {
            throw JWKSFetchFailure(description: "the identity provider answered HTTP \(response.status.code)")
        }
        let body = try await response.body.collect(upTo: Self.maxBodyBytes)
        return Array(buffer: body)
    }
}

/// A fetch that got an answer, but not a JWKS document.
struct JWKSFetchFailure: Error, CustomStringConvertible {
    let description: String
}
