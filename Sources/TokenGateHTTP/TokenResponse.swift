import NIOCore
import TokenGateCore

/// The body of a successful token response. Its shape (TokenGate's own, or a provider's legacy `response:`
/// mapping) is laid out once per provider (``TokenBodyFormat``); a request writes it from the cached token.
enum TokenResponse {
    static func body(for grant: TokenGrant, now: Int64) -> ByteBuffer {
        // Exact capacity, one allocation, and the pieces copied into it in one pass: a body comes in some fifty
        // pieces, and a `writeBytes` for each (its uniqueness and capacity checks) cost more than the copying.
        let count = grant.bodyByteCount(now: now)
        var buffer = ByteBufferAllocator().buffer(capacity: count)
        buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { output in
            var written = 0
            grant.writeBody(now: now) { piece in
                // The count is exact; a format whose pieces outgrow it is a bug, stopped here rather than overrun.
                precondition(piece.count <= count - written, "a token body longer than its byte count")
                UnsafeMutableRawBufferPointer(rebasing: output[written...]).copyMemory(from: piece)
                written += piece.count
            }
            return written
        }
        return buffer
    }
}
