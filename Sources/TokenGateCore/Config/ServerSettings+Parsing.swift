import Logging
import YAML

extension ServerSettings {
    /// The keys `server:` may have.
    static let keys: Set<String> = [
        "host", "port", "maxConnections", "listenBacklog", "idleTimeout", "readTimeout", "fastPath", "eventLoops", "admin", "tls",
        "trustedProxies", "proxyProtocol", "logFormat", "logLevel", "logBudget", "readiness",
    ]

    /// The `server:` section:
    ///
    /// ```yaml
    /// server:
    ///   host: 127.0.0.1          # string, default 127.0.0.1
    ///   port: 8080               # 0...65535 (0: any free port), default 8080
    ///   maxConnections: 10000    # 1...1000000, default 10000
    ///   listenBacklog: 65535     # 1...65535, default 65535 (Linux caps it at net.core.somaxconn)
    ///   idleTimeout: 60s         # 1s...1h, default 60s
    ///   readTimeout: 10s         # 100ms...5m, default 10s
    ///   fastPath: true           # token requests answered from the event loop; default true
    ///   eventLoops: 2            # 1...1024, default: one per CPU the process may run on
    ///   admin:                   # metrics and health; default 127.0.0.1:9464; `admin: { enabled: false }` for none
    ///     host: 127.0.0.1
    ///     port: 9464
    ///     maxConnections: 256    # 1...10000, default 256: its own cap, apart from the public listener's
    ///   tls: { certificateFile, privateKeyFile, minimumVersion }   # see TLSSettings
    ///   trustedProxies:          # default none: every peer is the client
    ///     networks: [10.0.0.0/8, 35.191.0.0/16]   # or the list alone: `trustedProxies: [10.0.0.0/8]`
    ///     hops: 1                # 1...16: hops that are proxies by position, the peer counting as one; default 1
    ///     header: x-forwarded-for   # or forwarded (RFC 7239)
    ///   proxyProtocol: off       # off, v1 or v2: trusted peers open each connection with a PROXY header
    ///   logFormat: text          # text or json
    ///   logLevel: info           # trace, debug, info, notice, warning, error, critical
    ///   logBudget: { rate: 20/s, burst: 200 }   # each tenant's lines; or off
    ///   readiness: { requireProviders: [acme-rides], startTimeout: 30s }   # see ReadinessSettings
    /// ```
    static func parse(_ node: ConfigNode) throws -> ServerSettings {
        let mapping = try node.mapping(allowedKeys: keys)
        var server = ServerSettings()
        if let host = mapping.optional("host") { server.host = try host.nonEmptyString() }
        if let port = mapping.optional("port") { server.port = try port.int(in: 0...65535) }
        if let value = mapping.optional("maxConnections") { server.maxConnections = try value.int(in: 1...1_000_000) }
        if let value = mapping.optional("listenBacklog") { server.listenBacklog = try value.int(in: 1...65535) }
        if let value = mapping.optional("idleTimeout") {
            server.idleTimeout = try duration(value, in: .seconds(1)...(.seconds(3600)), "1s and 1h")
        }
        if let value = mapping.optional("readTimeout") {
            server.readTimeout = try duration(value, in: .milliseconds(100)...(.seconds(300)), "100ms and 5m")
        }
        if let value = mapping.optional("fastPath") { server.fastPath = try value.bool() }
        if let value = mapping.optional("eventLoops") { server.eventLoops = try value.int(in: 1...1024) }
        if let value = mapping.optional("admin") { server.admin = try parseAdmin(value) }
        if let value = mapping.optional("tls") { server.tls = try TLSSettings.parse(value) }
        if let value = mapping.optional("trustedProxies") { server.trustedProxies = try parseTrustedProxies(value) }
        if let value = mapping.optional("proxyProtocol") {
            let text = try value.string()
            if text != "off" {
                guard let version = ProxyProtocolVersion(rawValue: text) else { throw value.error("must be off, v1 or v2, got '\(text)'") }
                guard server.trustedProxies != nil else {
                    throw value.error("needs server.trustedProxies: a PROXY header is believed only from a trusted proxy")
                }
                server.proxyProtocol = version
            }
        }
        if let value = mapping.optional("logFormat") {
            let text = try value.string()
            guard let format = LogFormat(rawValue: text) else { throw value.error("must be text or json, got '\(text)'") }
            server.logFormat = format
        }
        if let value = mapping.optional("logLevel") {
            let text = try value.string()
            guard let level = Logger.Level(rawValue: text) else {
                throw value.error("must be trace, debug, info, notice, warning, error or critical, got '\(text)'")
            }
            server.logLevel = level
        }
        if let value = mapping.optional("readiness") { server.readiness = try ReadinessSettings.parse(value) }
        if let value = mapping.optional("logBudget") { server.logBudget = try parseLogBudget(value) }
        if let admin = server.admin, admin.host == server.host, admin.port == server.port, admin.port != 0 {
            throw (mapping.optional("admin") ?? mapping.optional("port") ?? node).error(
                "the admin listener must not share the public port \(server.port)")
        }
        return server
    }

    /// `off`, or `{ rate: 20/s, burst: 200 }` (burst default: the rate's count).
    private static func parseLogBudget(_ node: ConfigNode) throws -> RateLimit? {
        if node.yaml.scalar != nil {
            guard try node.string() == "off" else { throw node.error("expected off or { rate: 20/s, burst: 200 }") }
            return nil
        }
        let mapping = try node.mapping(allowedKeys: ["rate", "burst"])
        let rateNode = try mapping.required("rate")
        let text = try rateNode.string()
        guard let parsed = RateLimit(parsing: text, burst: 1) else {
            throw rateNode.error("expected a rate such as 20/s or 600/min, got '\(text)'")
        }
        return RateLimit(count: parsed.count, per: parsed.period, burst: try mapping.optional("burst")?.int(in: 1...1_000_000) ?? parsed.count)
    }

    private static func parseTrustedProxies(_ node: ConfigNode) throws -> TrustedProxies {
        var networksNode = node
        var proxies = TrustedProxies(networks: [])
        if case .mapping = node.yaml.content {
            let mapping = try node.mapping(allowedKeys: ["networks", "hops", "header"])
            networksNode = try mapping.required("networks")
            if let hops = mapping.optional("hops") { proxies.hops = try hops.int(in: 1...16) }
            if let header = mapping.optional("header") {
                let text = try header.string()
                guard let parsed = TrustedProxies.Header(rawValue: text.lowercased()) else {
                    throw header.error("must be x-forwarded-for or forwarded, got '\(text)'")
                }
                proxies.header = parsed
            }
        }
        for entry in try networksNode.sequence() {
            let text = try entry.string()
            guard let network = IPNetwork(parsing: text) else {
                throw entry.error("expected an address or CIDR block such as 10.0.0.0/8 or 2001:db8::/32 (host bits zero), got '\(text)'")
            }
            proxies.networks.append(network)
        }
        guard !proxies.networks.isEmpty else {
            throw networksNode.error("list at least one address or CIDR block (remove trustedProxies to trust no proxy)")
        }
        if proxies.networks.contains(where: { $0.prefixLength == 0 }) {
            throw networksNode.error("0.0.0.0/0 or ::/0 would let any client choose its own address")
        }
        return proxies
    }

    private static func parseAdmin(_ node: ConfigNode) throws -> AdminListener? {
        let mapping = try node.mapping(allowedKeys: ["enabled", "host", "port", "maxConnections"])
        if let enabled = mapping.optional("enabled"), try !enabled.bool() { return nil }
        var admin = AdminListener()
        if let host = mapping.optional("host") { admin.host = try host.nonEmptyString() }
        if let port = mapping.optional("port") { admin.port = try port.int(in: 0...65535) }
        if let value = mapping.optional("maxConnections") { admin.maxConnections = try value.int(in: 1...10_000) }
        return admin
    }

    private static func duration(_ node: ConfigNode, in range: ClosedRange<Duration>, _ bounds: String) throws -> Duration {
        let value = try node.duration()
        guard range.contains(value) else { throw node.error("must be between \(bounds)") }
        return value
    }
}
