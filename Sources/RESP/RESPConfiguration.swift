/// How to reach one Redis (or Valkey) server and how to use it: a value, built from a `redis://` or `rediss://`
/// URL (``init(url:)``) or field by field.
package struct RESPConfiguration: Sendable, Hashable {
    /// RESP2 (the default, every server) or RESP3 (Redis 6 and later, negotiated with `HELLO 3`).
    package enum ProtocolVersion: Int, Sendable, Hashable {
        case resp2 = 2
        case resp3 = 3
    }

    /// TLS for `rediss://`, through swift-nio-ssl; the certificate chain and the host name are always verified.
    package struct TLS: Sendable, Hashable {
        /// Which certificate authorities to trust.
        package enum TrustRoots: Sendable, Hashable {
            /// The system's trust store.
            case system
            /// The CA certificates (PEM) in this file, and no others.
            case certificateFile(String)
        }

        /// Default `.system`.
        package var trustRoots: TrustRoots
        /// The name the server's certificate must carry; nil means the host connected to (an IP address is then
        /// checked against the certificate's IP addresses). swift-nio-ssl also accepts a certificate that lists the
        /// IP address connected to, whatever the name.
        package var serverName: String?

        /// TLS trusting `trustRoots`, expecting `serverName`.
        package init(trustRoots: TrustRoots = .system, serverName: String? = nil) {
            self.trustRoots = trustRoots
            self.serverName = serverName
        }
    }

    /// Growth of the wait between failed connection attempts: doubled from `initial` up to `maximum`, each wait
    /// drawn at random from its upper half, so replicas that lost Redis together do not return in step.
    package struct Backoff: Sendable, Hashable {
        /// The first wait. Default 100 ms.
        package var initial: Duration
        /// The longest wait. Default 5 s.
        package var maximum: Duration

        /// A backoff from `initial` to `maximum`.
        package init(initial: Duration = .milliseconds(100), maximum: Duration = .seconds(5)) {
            self.initial = initial
            self.maximum = maximum
        }
    }

    /// Where Redis Sentinel watches a primary and its replicas: the client asks a Sentinel for the primary's address
    /// before each connection it opens, and drops a connection whose server was demoted (a `READONLY` reply).
    package struct Sentinel: Sendable, Hashable {
        /// A Sentinel's address.
        package struct Address: Sendable, Hashable, CustomStringConvertible {
            /// Host name or IP address.
            package var host: String
            /// TCP port (Sentinel's default is 26379).
            package var port: Int

            /// The Sentinel at `host:port`.
            package init(host: String, port: Int = 26379) {
                self.host = host
                self.port = port
            }

            package var description: String { host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)" }
        }

        /// The Sentinels, asked in order until one answers.
        package var addresses: [Address]
        /// The name the Sentinels monitor the primary under (`sentinel monitor <name> …`).
        package var primaryName: String
        /// The Sentinels' own ACL user, if they require one.
        package var username: String?
        /// The Sentinels' own password (`requirepass` in sentinel.conf), if any. Never printed.
        package var password: String?

        /// Sentinels at `addresses` watching `primaryName`.
        package init(addresses: [Address], primaryName: String) {
            self.addresses = addresses
            self.primaryName = primaryName
        }
    }

    /// Host name or IP address.
    package var host: String
    /// TCP port. Default 6379.
    package var port: Int
    /// ACL user name; nil with a password means the `default` user (plain `AUTH password`).
    package var username: String?
    /// Password; nil sends no `AUTH`. Never printed.
    package var password: String?
    /// Database selected on every connection (`SELECT`). Default 0.
    package var database: Int
    /// TLS settings; nil connects in plain text.
    package var tls: TLS?
    /// Sentinels that name the server (`host` and `port` are then the last primary they named); nil to connect to
    /// `host:port` itself.
    package var sentinel: Sentinel?
    /// Default `.resp2`.
    package var protocolVersion: ProtocolVersion
    /// Most connections the pool leases to callers (at least 1), and most shared ones. Default 8.
    package var maxConnections: Int
    /// Shared connections per event loop of the client's group, that ``RESPClient/send(_:deadline:)`` multiplexes
    /// commands on (at least 1). Default 1: one connection already carries tens of thousands of commands a second.
    package var connectionsPerEventLoop: Int
    /// Most callers waiting for a busy pool; more fail at once with ``RESPError/poolExhausted``. Default 256.
    package var maxWaiters: Int
    /// How long a caller waits for a connection from a busy pool. Default 1 s.
    package var leaseTimeout: Duration
    /// How long opening a TCP connection may take. Default 2 s.
    package var connectTimeout: Duration
    /// Deadline of a command that names none, and of each command of the handshake. Default 2 s.
    package var commandTimeout: Duration
    /// Waits between failed connection attempts.
    package var reconnectBackoff: Backoff
    /// Bounds on what the server may send.
    package var decoderLimits: RESPDecoder.Limits

    /// A configuration for `host:port` with every other setting at its default.
    package init(host: String, port: Int = 6379) {
        self.host = host
        self.port = port
        self.database = 0
        self.protocolVersion = .resp2
        self.maxConnections = 8
        self.connectionsPerEventLoop = 1
        self.maxWaiters = 256
        self.leaseTimeout = .seconds(1)
        self.connectTimeout = .seconds(2)
        self.commandTimeout = .seconds(2)
        self.reconnectBackoff = Backoff()
        self.decoderLimits = RESPDecoder.Limits()
    }
}

extension RESPConfiguration: CustomStringConvertible {
    /// The URL form with the password redacted, for logs.
    package var description: String {
        if let sentinel {
            return "the primary \(sentinel.primaryName) of the Sentinels \(sentinel.addresses.map(\.description).joined(separator: ", "))"
        }
        let scheme = tls == nil ? "redis" : "rediss"
        let user = username ?? ""
        let credentials = password == nil ? (user.isEmpty ? "" : "\(user)@") : "\(user):<redacted>@"
        let hostPart = host.contains(":") ? "[\(host)]" : host
        return "\(scheme)://\(credentials)\(hostPart):\(port)/\(database)"
    }
}
