import JOSE
import Logging
import Synchronization
import Testing

@testable import TokenGateCore

/// An identity provider's JWKS endpoint in memory: answers what the test scripted, counts fetches, and reports
/// each fetch on ``fetches`` so a test can await the refresher instead of sleeping.
final class ScriptedJWKSFetcher: JWKSFetcher {
    enum Answer: Sendable {
        case body([UInt8])
        case failure(String)
    }

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private let state: Mutex<(answer: Answer, count: Int, urls: [String])>
    private let continuation: AsyncStream<Int>.Continuation
    /// The running number of every fetch, as it happens.
    let fetches: AsyncStream<Int>

    init(_ answer: Answer) {
        state = Mutex((answer, 0, []))
        (fetches, continuation) = AsyncStream.makeStream(of: Int.self)
    }

    convenience init(serving keys: JWKSet) throws {
        self.init(.body(try keys.publicJSON()))
    }

    var count: Int { state.withLock { $0.count } }
    var urls: [String] { state.withLock { $0.urls } }

    func answer(_ answer: Answer) { state.withLock { $0.answer = answer } }

    func serve(_ keys: JWKSet) throws { answer(.body(try keys.publicJSON())) }

    func fetchJWKS(from url: String) async throws -> [UInt8] {
        let (answer, count) = state.withLock { state in
            state.count += 1
            state.urls.append(url)
            return (state.answer, state.count)
        }
        continuation.yield(count)
        switch answer {
        case .body(let bytes): return bytes
        case .failure(let reason): throw Failure(description: reason)
        }
    }
}

extension TestIdentityProvider {
    /// A jwt client whose keys come from `keySet` (a `jwksUrl:` client).
    func remoteClient(_ keySet: RemoteKeySet, name: String = "rider-app") -> ClientConfig {
        ClientConfig(
            name: name,
            credential: .jwt(
                SessionTokenSettings(
                    keySource: .url(keySet.url), issuer: issuer, audiences: [Self.audience], leeway: 30)),
            allow: [.consumer: .claim("trips")])
    }
}
