package import AsyncHTTPClient
import NIOCore

extension OutboundExchange {
    /// The configuration of the process's one HTTP client, which the gateway makes (and shuts down) and hands to
    /// every plugin and transport: no redirects (an answer must come from the URL configured; a 3xx comes back as
    /// its status), no connection retries inside the client (each caller's ``RetryPolicy`` is the only retry
    /// budget), a 2 s connect timeout, and up to 128 HTTP/1 connections to one host. AsyncHTTPClient's default of 8
    /// made every plain-HTTP/1 peer a queue: cold mints through IAM at 50 ms a call stopped at about 84 a second
    /// whatever `maxConcurrentSigns` said (over TLS, Google's endpoints speak HTTP/2 and multiplex anyway).
    package static func clientConfiguration() -> HTTPClient.Configuration {
        var configuration = HTTPClient.Configuration(redirectConfiguration: .disallow)
        configuration.connectionPool.retryConnectionEstablishment = false
        configuration.connectionPool.concurrentHTTP1ConnectionsPerHostSoftLimit = 128
        configuration.timeout.connect = .seconds(2)
        return configuration
    }
}
