import NIOCore
import RESP
import RESPTesting
import Synchronization
import Testing

/// Pub/sub on a dedicated connection: messages arrive, cancellation unsubscribes, a dropped connection resubscribes.
@Suite struct PubSubTests {
    @Test(arguments: [RESPConfiguration.ProtocolVersion.resp2, .resp3])
    func aPublishedMessageArrives(version: RESPConfiguration.ProtocolVersion) async throws {
        try await RedisServer.with { server async throws in
            try await server.withClient({ $0.protocolVersion = version }) { client async throws in
                let received = try await client.subscribe(to: ["minted:a", "minted:b"]) { messages async throws in
                    #expect(try await client.publish("token-ready", to: "minted:b") == 1)
                    var iterator = messages.makeAsyncIterator()
                    return await iterator.next()
                }
                #expect(received == RESPMessage(channel: "minted:b", payload: ByteBuffer(string: "token-ready")))
            }
        }
    }

    @Test func endingTheSubscriptionUnsubscribes() async throws {
        try await RedisServer.with { server async throws in
            try await server.withClient { client async throws in
                try await client.subscribe(to: ["events"]) { _ async throws in
                    #expect(try await Self.subscribers(of: "events", on: client) == 1)
                }
                #expect(try await Self.eventuallyNoSubscribers(of: "events", on: client))
            }
        }
    }

    @Test func cancellingTheSubscribingTaskUnsubscribes() async throws {
        try await RedisServer.with { server async throws in
            try await server.withClient { client async throws in
                let (subscribed, signal) = AsyncStream.makeStream(of: Void.self)
                let listener = Task {
                    try await client.subscribe(to: ["events"]) { messages async throws in
                        signal.yield()
                        for await _ in messages {}
                    }
                }
                for await _ in subscribed { break }
                #expect(try await Self.subscribers(of: "events", on: client) == 1)
                listener.cancel()
                _ = await listener.result
                #expect(try await Self.eventuallyNoSubscribers(of: "events", on: client))
            }
        }
    }

    /// The server drops the subscriber connection (`CLIENT KILL TYPE pubsub`); the client reconnects and
    /// subscribes again, so later messages still arrive.
    @Test func aDroppedSubscriberConnectionResubscribes() async throws {
        try await RedisServer.with { server async throws in
            try await server.withClient { client async throws in
                try await client.subscribe(to: ["events"]) { messages async throws in
                    try await client.send(["CLIENT", "KILL", "TYPE", "pubsub"])
                    var iterator = messages.makeAsyncIterator()
                    // Published until a subscriber hears it: messages sent while reconnecting are lost, as in pub/sub.
                    var attempt = 0
                    let heard = try await eventually {
                        attempt += 1
                        return try await client.publish("after-\(attempt)", to: "events") == 1
                    }
                    #expect(heard, "the client subscribed again")
                    guard heard else { return }  // no message will come
                    let message = await iterator.next()
                    #expect(message?.channel == "events")
                    #expect(message.map { String(buffer: $0.payload).hasPrefix("after-") } == true)
                }
            }
        }
    }

    /// A subscriber that must not miss a message learns when it may have: the connection dropped (then subscribed
    /// again), or messages came faster than the body read them and some were dropped.
    @Test func aDropAndAnOverflowAreReportedAsGaps() async throws {
        try await RedisServer.with { server async throws in
            try await server.withClient { client async throws in
                let gaps = Mutex<[RESPSubscriptionGap]>([])
                try await client.subscribe(to: ["events"], bufferSize: 4, gaps: { gap in gaps.withLock { $0.append(gap) } }) {
                    messages async throws in
                    #expect(gaps.withLock { $0 }.isEmpty)
                    try await client.send(["CLIENT", "KILL", "TYPE", "pubsub"])
                    #expect(try await eventually { gaps.withLock { $0 } == [.lost, .restored] })
                    // Nothing read meanwhile: the fifth message finds the buffer of four full.
                    for index in 0..<5 { _ = try await client.publish("m-\(index)", to: "events") }
                    #expect(try await eventually { gaps.withLock { $0 } == [.lost, .restored, .overflowed] })
                    var iterator = messages.makeAsyncIterator()
                    #expect(await iterator.next().map { String(buffer: $0.payload) } == "m-1", "the oldest was dropped")
                }
            }
        }
    }

    @Test func aFirstSubscriptionThatCannotConnectThrows() async throws {
        let port = try RedisServer.freeLoopbackPort()
        let client = try RESPClient(configuration: RESPConfiguration(host: "127.0.0.1", port: port))
        await #expect(throws: (any Error).self) {
            try await client.subscribe(to: ["events"]) { _ in Issue.record("the body ran without a subscription") }
        }
        await client.shutdown()
    }

    /// Whether the channel's subscriber count drops to 0 (within ``eventually(within:every:_:)``'s limit): the
    /// server handles the unsubscribe and close in its own time, after our connection is gone.
    static func eventuallyNoSubscribers(of channel: String, on client: RESPClient) async throws -> Bool {
        try await eventually { try await subscribers(of: channel, on: client) == 0 }
    }

    static func subscribers(of channel: String, on client: RESPClient) async throws -> Int64? {
        try await client.send(["PUBSUB", "NUMSUB", channel]).elements?.last?.integer
    }
}
