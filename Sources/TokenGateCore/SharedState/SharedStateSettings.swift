import Foundation
import JOSE
import OpenSSLPrimitives

/// `sharedState:`: the store several replicas share their tokens, mint locks, rate limits and ended contexts in.
/// Without it, each process keeps all of that in memory, as a single gateway does.
///
/// ```yaml
/// sharedState:
///   redis:
///     url: redis://10.0.0.5:6379/0        # rediss:// for TLS; or, with Sentinel watching the primary:
///     # sentinels: [10.0.0.5:26379, 10.0.0.6:26379, 10.0.0.7:26379]
///     # primaryName: tokengate            # its `sentinel monitor` name
///     # database: 0                       # with sentinels (a URL names its own)
///     username: tokengate                 # ACL user (optional)
///     password: ${REDIS_PASSWORD}
///   encryptionKey: ${TOKENGATE_SHARED_KEY} # 32 bytes, base64 (openssl rand -base64 32)
///   replicas: 3                            # local limits are limit ÷ replicas while Redis is down
///   uncheckedContexts: refuse              # or serve: a context whose end cannot be checked (Redis down)
/// ```
package struct SharedStateSettings: Sendable, Equatable {
    /// Where Redis (or Valkey) is and how to talk to it.
    package var redis: RedisSettings
    /// The AES-256-GCM key values are sealed with in Redis: a token there is a bearer credential.
    package var encryptionKey: [UInt8]
    /// How many replicas share the limits: each falls back to `limit ÷ replicas` while Redis is unreachable.
    package var replicas: Int = 1
    /// Prefix of every key and channel, so several gateways (or other programs) can share one database.
    package var keyPrefix: String = "tokengate:"
    /// How long a replica's mint lock lives if its holder never releases it (a crash): then one waiting replica
    /// takes it over, and the others mint on their own after twice this. Longer than a backend call may take.
    package var lockTimeout: Duration = .seconds(10)
    /// How often a replica publishes again the ends and lifts made here that the store could not take.
    package var resyncInterval: Duration = .seconds(5)
    /// What a replica does with a trip, vehicle, task or shipment whose end it cannot check: the store unreachable,
    /// or its subscription to the others' ends down.
    package var uncheckedContexts: UncheckedContexts = .refuse

    /// `sharedState.uncheckedContexts`.
    package enum UncheckedContexts: String, Sendable, Equatable {
        /// Refused `503 shared_state_unavailable` until the store answers again (the default): no replica serves a
        /// token for a context ended anywhere. Tokens that name no single context (fleet readers, batches) are still
        /// minted locally.
        case refuse
        /// Served from this replica's cache, or minted locally, as a gateway alone would: an end made at another
        /// replica meanwhile is not seen here until the store answers again.
        case serve
    }

    /// `sharedState.redis`.
    package struct RedisSettings: Sendable, Equatable {
        /// `redis://[user[:password]@]host[:port][/db]` or `rediss://…` for TLS; empty with ``sentinel``.
        package var url: String
        /// The Sentinels that name the primary, instead of one `url`.
        package var sentinel: SentinelSettings?
        /// `host:port` of some nodes of a Redis Cluster (`cluster`), instead of one `url`.
        package var cluster: [String]?
        /// ACL user name; overrides the URL's.
        package var username: String?
        /// Password (`${ENV}`); overrides the URL's.
        package var password: String?
        /// PEM file of the CA that signed the servers' certificates (`rediss://`, or Sentinels with `tls: true`;
        /// system roots otherwise).
        package var caFile: String?
        /// The deadline of each command: a Redis slower than this is treated as down for that request.
        package var timeout: Duration = .milliseconds(250)
        /// Most connections per replica that requests' commands share (one per event loop is used when this
        /// allows), not counting the subscription's.
        package var maxConnections: Int = 16

        /// Settings for `url` with the defaults.
        package init(url: String) { self.url = url }

        /// The URL for logs and reports: a password in it replaced; with Sentinels, them and the primary's name.
        package var redactedURL: String {
            if let sentinel { return "the primary \(sentinel.primaryName) of the Sentinels \(sentinel.addresses.joined(separator: ", "))" }
            if let cluster { return "the cluster of \(cluster.joined(separator: ", "))" }
            guard var components = URLComponents(string: url) else { return "<unparsable URL>" }
            if components.password != nil { components.password = "redacted" }
            return components.string ?? "<unparsable URL>"
        }
    }

    /// `sharedState.redis.sentinels` and the keys beside it.
    package struct SentinelSettings: Sendable, Equatable {
        /// `host:port` of each Sentinel, asked in order.
        package var addresses: [String]
        /// The name the Sentinels monitor the primary under.
        package var primaryName: String
        /// The Sentinels' own ACL user (`sentinelUsername`), if they require one.
        package var username: String?
        /// The Sentinels' own password (`sentinelPassword`), if they require one.
        package var password: String?
        /// The database number on the primary (`database`, default 0); a URL gives its own.
        package var database: Int = 0
        /// Whether the Sentinels and the data nodes are reached over TLS (`tls: true`; `caFile` then names the CA).
        package var tls = false
    }

    /// Settings with the defaults.
    package init(redis: RedisSettings, encryptionKey: [UInt8]) {
        self.redis = redis
        self.encryptionKey = encryptionKey
    }

    static func parse(_ node: ConfigNode) throws -> SharedStateSettings {
        let mapping = try node.mapping(allowedKeys: [
            "redis", "encryptionKey", "replicas", "keyPrefix", "lockTimeout", "resyncInterval", "uncheckedContexts",
        ])
        let redis = try RedisSettings.parse(mapping.required("redis"))
        let keyNode = try mapping.required("encryptionKey")
        let keyText = try keyNode.nonEmptyString()
        guard let key = Data(base64Encoded: keyText), key.count == AESGCM.keyLength else {
            throw keyNode.error("must be 32 bytes in base64 (make one with: openssl rand -base64 32)")
        }
        var settings = SharedStateSettings(redis: redis, encryptionKey: [UInt8](key))
        if let node = mapping.optional("replicas") { settings.replicas = try node.int(in: 1...1_000) }
        if let node = mapping.optional("keyPrefix") {
            settings.keyPrefix = try node.nonEmptyString()
            guard settings.keyPrefix.utf8.count <= 64, settings.keyPrefix.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
                throw node.error("must be at most 64 printable ASCII characters without spaces")
            }
        }
        if let node = mapping.optional("lockTimeout") {
            settings.lockTimeout = try node.duration()
            guard settings.lockTimeout >= .seconds(1), settings.lockTimeout <= .seconds(300) else { throw node.error("must be between 1s and 5m") }
        }
        if let node = mapping.optional("resyncInterval") {
            settings.resyncInterval = try node.duration()
            guard settings.resyncInterval >= .milliseconds(100), settings.resyncInterval <= .seconds(3_600) else {
                throw node.error("must be between 100ms and 1h")
            }
        }
        if let node = mapping.optional("uncheckedContexts") {
            let text = try node.string()
            guard let value = UncheckedContexts(rawValue: text) else { throw node.error("must be refuse or serve, got '\(text)'") }
            settings.uncheckedContexts = value
        }
        return settings
    }
}

extension SharedStateSettings.RedisSettings {
    static func parse(_ node: ConfigNode) throws -> Self {
        let mapping = try node.mapping(allowedKeys: [
            "url", "sentinels", "cluster", "primaryName", "sentinelUsername", "sentinelPassword", "database", "tls", "username",
            "password", "caFile", "timeout", "maxConnections",
        ])
        let topologies = ["url", "sentinels", "cluster"].filter { mapping.optional($0) != nil }
        if topologies.count > 1, let second = mapping.optional(topologies[1]) {
            throw second.keyError(
                "give one of url (one server), sentinels (the primary Sentinel names) or cluster (its nodes), not "
                    + "\(topologies.joined(separator: " and "))"
            )
        }
        var settings: Self
        if let clusterNode = mapping.optional("cluster") {
            for key in ["primaryName", "sentinelUsername", "sentinelPassword", "database", "tls"] {
                if let node = mapping.optional(key) { throw node.keyError("is only used with sentinels") }
            }
            settings = Self(url: "")
            settings.cluster = try SharedStateSettings.SentinelSettings.addresses(clusterNode, of: "a cluster node", defaultPort: 6379)
        } else if let sentinelsNode = mapping.optional("sentinels") {
            settings = Self(url: "")
            settings.sentinel = try SharedStateSettings.SentinelSettings.parse(sentinelsNode, mapping: mapping)
        } else {
            for key in ["primaryName", "sentinelUsername", "sentinelPassword"] {
                if let node = mapping.optional(key) { throw node.keyError("is only used with sentinels") }
            }
            if let node = mapping.optional("database") {
                throw node.keyError("is only used with sentinels; a URL names its database (redis://host:6379/2)")
            }
            if let node = mapping.optional("tls") { throw node.keyError("is only used with sentinels; a URL asks for TLS with rediss://") }
            let urlNode = try mapping.required("url")
            let url = try urlNode.nonEmptyString()
            if let problem = Self.problem(with: url) { throw urlNode.error(problem) }
            settings = Self(url: url)
        }
        settings.username = try mapping.optional("username")?.nonEmptyString()
        settings.password = try mapping.optional("password")?.nonEmptyString()
        if let node = mapping.optional("caFile") {
            guard settings.url.hasPrefix("rediss://") || settings.sentinel?.tls == true else {
                throw node.keyError(settings.sentinel == nil ? "is only used with a rediss:// URL" : "is only used with tls: true")
            }
            settings.caFile = try node.path()
            guard FileManager.default.isReadableFile(atPath: settings.caFile!) else { throw node.error("cannot read \(settings.caFile!)") }
        }
        if let node = mapping.optional("timeout") {
            settings.timeout = try node.duration()
            guard settings.timeout >= .milliseconds(1), settings.timeout <= .seconds(10) else { throw node.error("must be between 1ms and 10s") }
        }
        if let node = mapping.optional("maxConnections") { settings.maxConnections = try node.int(in: 1...1_024) }
        return settings
    }

    /// What is wrong with `url`, or nil: the scheme, a host, a port and a database number are checked here so a
    /// mistake is reported at its line, not when the first request reaches Redis.
    static func problem(with url: String) -> String? {
        guard let components = URLComponents(string: url), let scheme = components.scheme else {
            return "must be a URL like redis://host:6379/0"
        }
        guard scheme == "redis" || scheme == "rediss" else { return "must start with redis:// or rediss:// (TLS), not \(scheme)://" }
        guard let host = components.host, !host.isEmpty else { return "names no host" }
        if let port = components.port, !(1...65_535).contains(port) { return "has port \(port), outside 1–65535" }
        let path = components.path.drop { $0 == "/" }
        if !path.isEmpty, Int(path).map({ (0...15_999).contains($0) }) != true { return "has database \"\(path)\"; it must be a number" }
        if components.query != nil || components.fragment != nil { return "must not have a query or fragment" }
        return nil
    }
}

extension SharedStateSettings.SentinelSettings {
    static func parse(_ node: ConfigNode, mapping: ConfigMapping) throws -> Self {
        let addresses = try addresses(node, of: "a Sentinel", defaultPort: 26379)
        var settings = Self(addresses: addresses, primaryName: try mapping.required("primaryName").nonEmptyString())
        settings.username = try mapping.optional("sentinelUsername")?.nonEmptyString()
        settings.password = try mapping.optional("sentinelPassword")?.nonEmptyString()
        if let node = mapping.optional("database") { settings.database = try node.int(in: 0...15_999) }
        if let node = mapping.optional("tls") { settings.tls = try node.bool() }
        return settings
    }

    /// The `host:port` items of a list of servers (`what`: "a Sentinel"), each located when it is not one.
    static func addresses(_ node: ConfigNode, of what: String, defaultPort: Int) throws -> [String] {
        let items = try node.sequence()
        guard !items.isEmpty else { throw node.error("list at least one \(what.dropFirst(2)) as host:port") }
        return try items.map { item in
            let text = try item.nonEmptyString()
            guard isHostAndPort(text) else { throw item.error("expected \(what) as host:port (\(defaultPort) is its usual port), got '\(text)'") }
            return text
        }
    }

    /// The host (without brackets) and port of `host:port` or `[v6]:port`, already validated.
    package static func hostAndPort(_ text: String) -> (host: String, port: Int) {
        let colon = text.lastIndex(of: ":")!
        var host = String(text[..<colon])
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return (host, Int(text[text.index(after: colon)...])!)
    }

    /// `host:port` or `[v6]:port`, with a port from 1 to 65535.
    static func isHostAndPort(_ text: String) -> Bool {
        guard let colon = text.lastIndex(of: ":"), let port = Int(text[text.index(after: colon)...]), (1...65_535).contains(port) else {
            return false
        }
        let host = text[..<colon]
        return !host.isEmpty && !host.contains("/") && !host.contains("@")
    }

    /// The address of each Sentinel: host (without brackets) and port.
    package var hostsAndPorts: [(host: String, port: Int)] { addresses.map(Self.hostAndPort) }
}
