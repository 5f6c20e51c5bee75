/// How a provider's token responses are written. The HTTP face decides the format (`TokenBodyFormat`); the service
/// makes one per provider when a generation is installed, so a cache entry holds only its token and a request
/// writes the body straight from it.
package protocol TokenBodyWriter: Sendable {
    /// The length in bytes of the body for `token`, issued for `context`, at `now` (epoch seconds).
    func byteCount(of token: DeliveredToken, context: TokenContext, now: Int64) -> Int
    /// Hands the body for `token`, issued for `context`, at `now` (epoch seconds) to `sink` in contiguous pieces, in
    /// order.
    func write(_ token: DeliveredToken, context: TokenContext, now: Int64, to sink: (UnsafeRawBufferPointer) -> Void)
}

/// Makes the response format of a provider.
package typealias TokenBodyWriterFactory = @Sendable (ProviderSettings) -> any TokenBodyWriter
