import Foundation

/// The `tracing:` section: OpenTelemetry spans exported over OTLP/HTTP. Absent, nothing is traced and nothing is
/// exported (and an incoming `traceparent` is not followed).
///
/// ```yaml
/// tracing:
///   otlp:
///     endpoint: http://otel-collector:4318/v1/traces   # the traces URL, used as written (http or https)
///     headers: { authorization: "Bearer ${OTLP_TOKEN}" }   # optional, sent with every export
///     timeout: 10s                                     # 1s...1m, default 10s
///   serviceName: tokengate     # the resource's service.name, default tokengate
///   sampleRatio: 1.0           # 0...1: the share of new traces recorded; a caller's sampled flag is followed
/// ```
///
/// Read once, at start: a reload that changes it is applied but warns that tracing changes on restart only.
package struct TracingSettings: Sendable, Equatable {
    /// Where spans are sent: the OTLP/HTTP traces URL (protobuf), as written.
    package var endpoint: String
    /// Extra headers of every export request (a collector's credentials).
    package var headers: [String: String]
    /// How long one export may take.
    package var timeout: Duration
    /// `service.name` of the exported resource.
    package var serviceName: String
    /// The share of traces started here that are recorded; a request that arrives with a `traceparent` is
    /// recorded when its caller's is.
    package var sampleRatio: Double

    /// Settings exporting to `endpoint` with the defaults.
    package init(
        endpoint: String, headers: [String: String] = [:], timeout: Duration = .seconds(10), serviceName: String = "tokengate",
        sampleRatio: Double = 1
    ) {
        self.endpoint = endpoint
        self.headers = headers
        self.timeout = timeout
        self.serviceName = serviceName
        self.sampleRatio = sampleRatio
    }

    static func parse(_ node: ConfigNode) throws -> TracingSettings {
        let mapping = try node.mapping(allowedKeys: ["otlp", "serviceName", "sampleRatio"])
        let otlpNode = try mapping.required("otlp")
        let otlp = try otlpNode.mapping(allowedKeys: ["endpoint", "headers", "timeout"])
        let endpointNode = try otlp.required("endpoint")
        let endpoint = try endpointNode.nonEmptyString()
        guard let url = URLComponents(string: endpoint), ["http", "https"].contains(url.scheme?.lowercased() ?? ""),
            url.host?.isEmpty == false, url.user == nil, url.password == nil
        else {
            throw endpointNode.error("must be an http or https URL with a host and no user info, such as http://127.0.0.1:4318/v1/traces")
        }
        var settings = TracingSettings(endpoint: endpoint)
        if let headersNode = otlp.optional("headers") {
            for (name, value) in try headersNode.entries() {
                guard Self.isToken(name) else { throw value.keyError("'\(name)' is not an HTTP header name") }
                let text = try value.string()
                guard !text.unicodeScalars.contains(where: { $0.value < 0x20 || $0.value == 0x7F }) else {
                    throw value.error("a header value cannot hold control characters")
                }
                settings.headers[name.lowercased()] = text
            }
        }
        if let value = otlp.optional("timeout") {
            settings.timeout = try value.duration()
            guard (Duration.seconds(1)...Duration.seconds(60)).contains(settings.timeout) else { throw value.error("must be between 1s and 1m") }
        }
        if let value = mapping.optional("serviceName") { settings.serviceName = try value.nonEmptyString() }
        if let value = mapping.optional("sampleRatio") {
            guard let ratio = Double(try value.string()), (0...1).contains(ratio) else { throw value.error("must be a number from 0 to 1") }
            settings.sampleRatio = ratio
        }
        return settings
    }

    /// RFC 9110's `token`: what a header name may be made of.
    private static func isToken(_ text: String) -> Bool {
        !text.isEmpty
            && text.utf8.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || "!#$%&'*+-.^_`|~".utf8.contains(byte)
            }
    }
}
