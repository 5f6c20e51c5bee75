package import NIOCore

/// A message published to a channel this client subscribed to.
package struct RESPMessage: Sendable, Hashable {
    /// The channel it was published to.
    package let channel: String
    /// What was published.
    package let payload: ByteBuffer

    /// A message as received (or, in a test, as expected).
    package init(channel: String, payload: ByteBuffer) {
        self.channel = channel
        self.payload = payload
    }
}

/// The messages of a subscription, in the order the server sent them, while ``RESPClient/subscribe(to:bufferSize:gaps:_:)``
/// runs its body. Messages published while the connection is being re-established are lost (pub/sub keeps
/// nothing), and when the body reads more slowly than messages arrive the oldest unread ones are dropped; both are
/// reported as ``RESPSubscriptionGap``s.
package struct RESPSubscription: AsyncSequence, Sendable {
    package typealias Element = RESPMessage
    let messages: AsyncStream<RESPMessage>

    /// An iterator over the messages; it ends when the subscription does.
    package func makeAsyncIterator() -> AsyncStream<RESPMessage>.Iterator { messages.makeAsyncIterator() }
}

/// What a subscriber missed between two messages, as ``RESPClient/subscribe(to:bufferSize:gaps:_:)`` reports it: pub/sub
/// keeps nothing, so a caller that must not miss a message learns when it may have.
package enum RESPSubscriptionGap: Sendable, Equatable {
    /// The connection dropped: messages published until ``restored`` are lost.
    case lost
    /// Subscribed again after a drop: messages arrive from now on.
    case restored
    /// Messages were dropped because the body read more slowly than they came (the buffer was full).
    case overflowed
}

/// A pub/sub frame: `[kind, channel, payload-or-count]`, from a RESP3 push or a RESP2 array.
struct PubSubFrame {
    let kind: String
    let channel: String
    let payload: RESPValue

    init?(_ value: RESPValue) {
        guard let elements = value.elements, elements.count == 3, let kind = elements[0].string,
            let channel = elements[1].string
        else { return nil }
        self.kind = kind.lowercased()
        self.channel = channel
        self.payload = elements[2]
    }
}
