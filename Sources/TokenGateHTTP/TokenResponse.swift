import NIOCore
import TokenGateCore

/// The body of a successful token response. Its shape (TokenGate's own, or a provider's legacy `response:`
/// mapping) is laid out once per provider (``TokenBodyFormat``); a request writes it from the cached token.
enum TokenResponse {
    static func body(for grant: TokenGrant, now: Int64) -> ByteBuffer {
        // Exact capacity: one allocation, no regrowth while the ~1 KiB body is copied in.
        var buffer = ByteBufferAllocator().buffer(capacity: grant.bodyByteCount(now: now))
        grant.writeBody(now: now) { buffer.writeBytes($0) }
        return buffer
    }
}
