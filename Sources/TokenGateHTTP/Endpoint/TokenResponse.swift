import NIOCore
import TokenGateCore

/// The body of a successful token response. Its shape (TokenGate's own, or a provider's legacy `response:`
/// mapping) is laid out once per provider (``TokenBodyFormat``); a request writes it from the cached token.
enum TokenResponse {
    /// The body in a buffer of its own.
    static func body(for grant: TokenGrant, now: Int64) -> ByteBuffer {
        let count = grant.bodyByteCount(now: now)
        var buffer = ByteBufferAllocator().buffer(capacity: count)
        write(grant, now: now, count: count, into: &buffer)
        return buffer
    }

    /// The body in `buffer`, cleared first: a buffer a connection keeps is written again without an allocation once
    /// the body it held last has been sent. A body is about 1 KiB, a size glibc's malloc serves from its large bins
    /// (merging freed small chunks first): with a full cache's heap that cost a hit several percent of its CPU.
    static func write(_ grant: TokenGrant, now: Int64, into buffer: inout ByteBuffer) {
        let count = grant.bodyByteCount(now: now)
        buffer.clear(minimumCapacity: count)
        write(grant, now: now, count: count, into: &buffer)
    }

    private static func write(_ grant: TokenGrant, now: Int64, count: Int, into buffer: inout ByteBuffer) {
        // The pieces copied in one pass: a body comes in some fifty pieces, and a `writeBytes` for each (its
        // uniqueness and capacity checks) cost more than the copying.
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
    }
}
