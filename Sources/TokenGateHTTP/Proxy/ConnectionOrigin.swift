import Synchronization
import TokenGateCore

/// Who one connection comes from, when a trusted proxy said so in a PROXY protocol header: set once by
/// ``ProxyProtocolHandler`` before any of the connection's requests is read, then read by each request.
///
/// The router's requests run in the connection's task, which carries it as ``current``; the event loop's fast
/// path holds it directly.
final class ConnectionOrigin: Sendable {
    private let client = Mutex<PeerAddress?>(nil)

    /// The connection being served by this task, when the listener takes PROXY headers.
    @TaskLocal static var current: ConnectionOrigin?

    /// The client the PROXY header named, or nil (no header yet, or one that named nobody).
    var proxiedClient: PeerAddress? { client.withLock { $0 } }

    func setProxiedClient(_ address: PeerAddress?) { client.withLock { $0 = address } }
}
