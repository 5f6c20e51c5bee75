import NIOCore
import TokenGateCore

/// The body of a successful token response. Its shape (TokenGate's own, or a provider's legacy `response:`
/// mapping) is rendered once per cached token (``RenderedTokenBody``); a request only copies it.
enum TokenResponse {
    static func body(for grant: TokenGrant, now: Int64) -> ByteBuffer {
        // Exact capacity: one allocation, no regrowth while the ~1 KiB body is copied in.
        var buffer = ByteBufferAllocator().buffer(capacity: grant.body.byteCount(now: now))
        grant.body.write(now: now) { buffer.writeBytes($0) }
        return buffer
    }
}
