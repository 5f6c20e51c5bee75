internal import Foundation

/// One fetch of one context: build the request, send it, classify the answer, retry with backoff.
///
/// A `Sendable` value with no state of its own, so it runs off the provider's actor.
struct TokenFetcher: Sendable {
    let configuration: TokenProvider.Configuration
    let credential: TokenProvider.CredentialSource
    let transport: any HTTPTransport
    let clock: any TokenClock

    /// Fetches `context`'s token, retrying as ``RetryPolicy`` allows; throws the last ``TokenGateClientError``
    /// (or `CancellationError`).
    ///
    /// A 401 is retried once, at once and outside the policy's count, when the credential source then returns another
    /// credential (the app's login was refreshed meanwhile); the same credential is never sent twice for nothing.
    func fetch(_ context: TokenContext) async throws -> FleetEngineToken {
        let url = try Self.url(base: configuration.baseURL, providerID: configuration.providerID, context: context)
        let policy = configuration.retryPolicy
        var secret = try await currentCredential()
        var askedAfterRefusal = false
        var attempt = 1
        while true {
            do {
                return try await fetchOnce(url, context: context, secret: secret)
            } catch let error as TokenGateClientError {
                if error.code == .unauthenticated, !askedAfterRefusal {
                    askedAfterRefusal = true
                    let renewed = try await currentCredential()
                    if renewed != secret {
                        secret = renewed
                        continue
                    }
                }
                guard let delay = policy.delay(after: error, attempt: attempt, random: Double.random(in: 0..<1))
                else { throw error }
                try await clock.sleep(for: delay)
                attempt += 1
                secret = try await currentCredential()  // asked before every attempt: a refreshed login is used
            }
        }
    }

    private func currentCredential() async throws(TokenGateClientError) -> String {
        let secret: String
        do {
            secret = try await credential()
        } catch {
            throw TokenGateClientError(
                code: .credentialUnavailable, message: "the app's credential source failed", underlying: error)
        }
        guard !secret.isEmpty else {
            throw TokenGateClientError(code: .credentialUnavailable, message: "the app's credential is empty")
        }
        return secret
    }

    private func fetchOnce(_ url: URL, context: TokenContext, secret: String) async throws -> FleetEngineToken {
        let request = HTTPTransportRequest(
            url: url, headers: ["Authorization": "Bearer \(secret)", "Accept": "application/json"])
        let response: HTTPTransportResponse
        do {
            response = try await transport.send(request)
        } catch is CancellationError {
            throw CancellationError()
        } catch let error as TokenGateClientError {  // a custom transport's own classification
            throw error
        } catch {
            throw TokenGateClientError(code: .network, message: "no response from the gateway", underlying: error)
        }
        guard (200..<300).contains(response.status) else {
            throw TokenGateClientError.fromResponse(
                status: response.status, body: response.body,
                retryAfter: Self.retryAfter(response.value(forHeader: "Retry-After")))
        }
        return try TokenResponseParser(format: configuration.responseFormat)
            .parse(response.body, for: context, receivedAt: clock.now)
    }

    /// `Retry-After` as delta-seconds, the form the gateway sends; an HTTP-date or garbage is ignored (backoff
    /// applies instead).
    static func retryAfter(_ value: String?) -> TimeInterval? {
        guard let value, let seconds = Double(value.trimmingCharacters(in: .whitespaces)), seconds.isFinite,
            seconds >= 0
        else { return nil }
        return seconds
    }

    /// `{base}/v1/providers/{providerId}/tokens/{tokenType}?{parameter}={id}`, every variable part percent-encoded
    /// (a batch's commas too: the gateway decodes them).
    static func url(base: URL, providerID: String, context: TokenContext) throws(TokenGateClientError) -> URL {
        var query: [String] = []
        for parameter in context.parameters {
            // A batch's every task ID must be there too: "t1,,t2" is refused by the gateway anyway.
            let items =
                parameter.name == TokenContext.Kind.tasks.parameterName
                ? parameter.value.split(separator: ",", omittingEmptySubsequences: false) : [Substring(parameter.value)]
            guard !items.contains(where: \.isEmpty) else {
                throw TokenGateClientError(code: .invalidRequest, message: "the \(parameter.name) is empty")
            }
            guard let value = percentEncoded(parameter.value) else {
                throw TokenGateClientError(code: .invalidRequest, message: "cannot encode the \(parameter.name)")
            }
            query.append("\(parameter.name)=\(value)")
        }
        guard !providerID.isEmpty, var components = URLComponents(url: base, resolvingAgainstBaseURL: false),
            let provider = percentEncoded(providerID)
        else {
            throw TokenGateClientError(code: .invalidRequest, message: "cannot build a gateway URL from the base URL")
        }
        var path = components.percentEncodedPath
        while path.hasSuffix("/") { path.removeLast() }
        components.percentEncodedPath = path + "/v1/providers/\(provider)/tokens/\(context.kind.tokenType)"
        components.percentEncodedQuery = query.isEmpty ? nil : query.joined(separator: "&")
        guard let url = components.url else {
            throw TokenGateClientError(code: .invalidRequest, message: "cannot build a gateway URL from the base URL")
        }
        return url
    }

    // RFC 3986 unreserved characters only: an ID with `&`, `/` or `#` cannot escape its slot.
    private static let unreserved = CharacterSet(
        charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")

    private static func percentEncoded(_ text: String) -> String? {
        text.addingPercentEncoding(withAllowedCharacters: unreserved)
    }
}
