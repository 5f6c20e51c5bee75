/// Which browser origins may call a provider's token route, and how long a browser may reuse a preflight answer.
///
/// Origins are listed one by one; a wildcard is never accepted. Every token request carries a credential (an
/// `Authorization` header), and the CORS rules let `*` stand for "any origin" only for requests without
/// credentials; an operator who writes `*` means "any web page may spend my users' credentials here", which
/// TokenGate refuses at load rather than silently narrowing.
package struct CORSPolicy: Sendable, Equatable {
    /// The allowed origins, written as browsers send them in `Origin`: lower-case `scheme://host`, then `:port`
    /// unless it is the scheme's default.
    package var allowedOrigins: Set<String>
    /// `Access-Control-Max-Age`: how long a browser may reuse a preflight answer, whole seconds.
    package var maxAgeSeconds: Int64

    /// The default `maxAge`: ten minutes (Chromium caps it at two hours, Firefox at a day).
    package static let defaultMaxAgeSeconds: Int64 = 600

    /// Creates a policy; `allowedOrigins` must already be in the form ``normalizedOrigin(_:)`` returns.
    package init(allowedOrigins: Set<String>, maxAgeSeconds: Int64 = Self.defaultMaxAgeSeconds) {
        self.allowedOrigins = allowedOrigins
        self.maxAgeSeconds = maxAgeSeconds
    }

    /// Whether a request whose `Origin` header is exactly `origin` may read the answer.
    package func allows(_ origin: String) -> Bool { allowedOrigins.contains(origin) }

    /// `text` as a browser would send it in `Origin`, or why it cannot be an allowed origin: `https://` and a host
    /// name or IPv4 address with an optional port, or `http://` for `localhost` and `127.0.0.1` only; no path (not
    /// even `/`), query, fragment, user or wildcard.
    package static func normalizedOrigin(_ text: String) -> Result<String, OriginError> {
        if text.contains("*") {
            return .failure(
                OriginError(
                    "a wildcard origin is never allowed: TokenGate's token route takes a credential (the Authorization header), so list each origin"))
        }
        guard let colon = text.firstIndex(of: ":"), text[colon...].hasPrefix("://") else {
            return .failure(OriginError("expected an origin such as https://ops.example.com, got '\(text)'"))
        }
        let scheme = text[..<colon].lowercased()
        let authority = text[text.index(colon, offsetBy: 3)...]
        guard scheme == "https" || scheme == "http" else {
            return .failure(OriginError("the scheme must be https (or http for localhost), got '\(scheme)'"))
        }
        if authority.hasPrefix("[") {
            return .failure(OriginError("IPv6 literals are not supported; use a host name, or http://localhost"))
        }
        if let bad = authority.first(where: { "/?#@".contains($0) }) {
            return .failure(OriginError("an origin is scheme://host[:port] only; '\(bad)' starts a path, query, fragment or user"))
        }
        var host = Substring(authority)
        var port: Int?
        if let colon = authority.lastIndex(of: ":") {
            let digits = authority[authority.index(after: colon)...]
            guard let number = Int(digits), (1...65535).contains(number), String(number) == digits else {
                return .failure(OriginError("the port must be a number from 1 to 65535, got '\(digits)'"))
            }
            host = authority[..<colon]
            port = number
        }
        let name = host.lowercased()
        guard isHostName(name) else {
            return .failure(OriginError("'\(host)' is not a host name or IPv4 address"))
        }
        guard scheme == "https" || name == "localhost" || name == "127.0.0.1" else {
            return .failure(OriginError("plain http is allowed for localhost and 127.0.0.1 only; use https://\(name)"))
        }
        let defaultPort = scheme == "https" ? 443 : 80
        return .success("\(scheme)://\(name)" + (port.map { $0 == defaultPort ? "" : ":\($0)" } ?? ""))
    }

    /// Dot-separated, non-empty labels of lower-case letters, digits and inner hyphens.
    private static func isHostName(_ name: String) -> Bool {
        let labels = name.split(separator: ".", omittingEmptySubsequences: false)
        return name.utf8.count <= 253
            && labels.allSatisfy { label in
                !label.isEmpty && label.utf8.count <= 63 && label.first != "-" && label.last != "-"
                    && label.utf8.allSatisfy {
                        (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                            || $0 == UInt8(ascii: "-")
                    }
            }
    }

    /// Why a configured origin was refused.
    package struct OriginError: Error, Sendable, CustomStringConvertible {
        /// The operator-facing reason.
        package let description: String
        init(_ description: String) { self.description = description }
    }

    /// `cors: { allowedOrigins: [https://ops.acme.example, http://localhost:3000], maxAge: 10m }`; `maxAge` is
    /// optional (0s to 24h, default 10m).
    static func parse(_ node: ConfigNode) throws -> CORSPolicy {
        let mapping = try node.mapping(allowedKeys: ["allowedOrigins", "maxAge"])
        let originsNode = try mapping.required("allowedOrigins")
        var origins = Set<String>()
        for item in try originsNode.sequence() {
            let text = try item.nonEmptyString()
            switch normalizedOrigin(text) {
            case .success(let origin):
                guard origins.insert(origin).inserted else { throw item.error("\(origin) is already listed") }
            case .failure(let error):
                throw item.error(error.description)
            }
        }
        guard !origins.isEmpty else { throw originsNode.error("list at least one origin, or leave cors out") }
        var maxAge = defaultMaxAgeSeconds
        if let value = mapping.optional("maxAge") {
            let duration = try value.duration()
            guard duration >= .zero, duration <= .seconds(86_400) else { throw value.error("must be between 0s and 24h") }
            maxAge = ConfigDuration.seconds(duration)
        }
        return CORSPolicy(allowedOrigins: origins, maxAgeSeconds: maxAge)
    }
}
