import Foundation
import Testing
import TokenGateClient

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

@Suite struct URLSessionTransportTests {
    final class Answer: @unchecked Sendable {  // written once by the delegate's synchronous completion, then read
        var request: URLRequest?? = .none
    }

    @Test func defaultTransportRefusesRedirectsSoTheCredentialStaysWithTheGateway() throws {
        let transport = URLSessionTransport()
        let delegate = try #require(transport.session.delegate as? any URLSessionTaskDelegate)
        let original = try #require(URL(string: "http://127.0.0.1:8080/v1/providers/acme-rides/tokens/consumer"))
        let target = try #require(URL(string: "https://collector.example/steal"))
        let response = try #require(
            HTTPURLResponse(
                url: original, statusCode: 302, httpVersion: "HTTP/1.1", headerFields: ["Location": "\(target)"]))
        var redirected = URLRequest(url: target)
        redirected.setValue("Bearer s3cret-session", forHTTPHeaderField: "Authorization")
        let task = transport.session.dataTask(with: original)
        defer { task.cancel() }
        let answer = Answer()
        #if canImport(FoundationNetworking)
            delegate.urlSession(
                transport.session, task: task, willPerformHTTPRedirection: response, newRequest: redirected
            ) { answer.request = .some($0) }
        #else
            delegate.urlSession?(
                transport.session, task: task, willPerformHTTPRedirection: response, newRequest: redirected
            ) { answer.request = .some($0) }
        #endif
        #expect(answer.request == .some(nil))
    }

    @Test(.timeLimit(.minutes(5)))
    func refusedLoopbackConnectionIsANetworkError() async throws {
        // Port 1 on loopback has no listener: a real URLSession round trip that fails fast, no server needed.
        let configuration = TokenProvider.Configuration(
            baseURL: try #require(URL(string: "http://127.0.0.1:1")), providerID: "acme-rides", retryPolicy: .none)
        let provider = TokenProvider(configuration: configuration, transport: URLSessionTransport(timeout: 10)) { "k" }
        let error = await #expect(throws: TokenGateClientError.self) { try await provider.token(for: .trip("t")) }
        #expect(error?.code == .network)
    }
}
