import Logging
import NIOCore

extension RESPClient {
    /// Subscribes to `channels` on a connection of its own and runs `body` with the messages; returns once the
    /// server has confirmed every subscription, so a message published after `body` starts is received.
    ///
    /// When the connection drops, it is re-opened after a backoff and the channels subscribed again, for as long as
    /// `body` runs. When `body` returns or throws, or its task is cancelled, the client unsubscribes and closes the
    /// connection. Throws without running `body` when the first subscription fails. Up to `bufferSize` messages
    /// wait for `body` to read them; beyond that the oldest are dropped. `gaps` is told of each drop of the connection,
    /// each subscription after one, and each time messages were dropped.
    ///
    /// ```swift
    /// try await client.subscribe(to: ["minted:trip-1"]) { messages in
    ///     for await message in messages { return message.payload }
    /// }
    /// ```
    package func subscribe<Result: Sendable>(
        to channels: [String], bufferSize: Int = 1024, gaps: @escaping @Sendable (RESPSubscriptionGap) -> Void = { _ in },
        _ body: (RESPSubscription) async throws -> Result
    ) async throws -> Result {
        precondition(!channels.isEmpty, "subscribe to at least one channel")
        let (messages, messageSink) = AsyncStream.makeStream(
            of: RESPMessage.self, bufferingPolicy: .bufferingNewest(bufferSize))
        let (started, startedSink) = AsyncStream.makeStream(of: Swift.Result<Void, any Error>.self)
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                await self.runSubscriber(channels: channels, messages: messageSink, started: startedSink, gaps: gaps)
            }
            defer { group.cancelAll() }
            var outcomes = started.makeAsyncIterator()
            guard let outcome = await outcomes.next() else { throw CancellationError() }
            try outcome.get()
            return try await body(RESPSubscription(messages: messages))
        }
    }

    /// Keeps one subscriber connection alive until cancelled: connects, subscribes, forwards messages, and after a
    /// drop waits out the backoff and does it again. Reports the first subscription's outcome to `started`.
    private func runSubscriber(
        channels: [String], messages: AsyncStream<RESPMessage>.Continuation,
        started: AsyncStream<Swift.Result<Void, any Error>>.Continuation, gaps: @escaping @Sendable (RESPSubscriptionGap) -> Void
    ) async {
        defer {
            messages.finish()
            started.finish()
        }
        var failures = 0
        var isStarted = false
        var isSubscribed = false
        while !Task.isCancelled {
            do {
                try await subscribeOnce(
                    channels: channels, open: { try await self.openConnection(pushes: $0) },
                    deliver: { if case .dropped = messages.yield($0) { gaps(.overflowed) } }
                ) {
                    failures = 0
                    if isStarted { gaps(.restored) } else { started.yield(.success(())) }
                    isStarted = true
                    isSubscribed = true
                }
            } catch {
                guard isStarted else {
                    started.yield(.failure(error))
                    return
                }
                failures += 1
                logger.warning("Redis subscriber connection failed", metadata: ["error": "\(error)"])
            }
            if isSubscribed {
                isSubscribed = false
                if !Task.isCancelled { gaps(.lost) }
            }
            guard !Task.isCancelled, !isShutdown else { return }
            let delay = configuration.reconnectBackoff.delay(afterFailures: max(failures, 1))
            do { try await Task.sleep(for: delay) } catch { return }
        }
    }

    /// One connection's life, on a connection `open` makes: returns when it closes or the task is cancelled, and
    /// then unsubscribes and closes.
    func subscribeOnce(
        channels: [String], open: (AsyncStream<RESPValue>.Continuation) async throws -> RESPConnection,
        deliver: (RESPMessage) -> Void, onSubscribed: () -> Void
    ) async throws {
        let (pushes, pushSink) = AsyncStream.makeStream(of: RESPValue.self)
        let connection = try await open(pushSink)
        do {
            try await connection.sendWithoutReply(RESPCommand(["SUBSCRIBE"] + channels))
            // Unconfirmed within the command timeout: the connection is closed, which ends the loop below.
            let confirmationDeadline = NIODeadline.now() + TimeAmount(configuration.commandTimeout)
            let watchdog = connection.channel.eventLoop.scheduleTask(deadline: confirmationDeadline) {
                connection.channel.close(promise: nil)
            }
            defer { watchdog.cancel() }
            var unconfirmed = Set(channels)
            // The iterator ends when the connection closes (the handler finishes the stream) or on cancellation.
            for await push in pushes {
                guard let frame = PubSubFrame(push) else { continue }
                switch frame.kind {
                case "message":
                    guard let payload = frame.payload.bytes else { continue }
                    deliver(RESPMessage(channel: frame.channel, payload: payload))
                case "subscribe":
                    if unconfirmed.remove(frame.channel) != nil, unconfirmed.isEmpty {
                        watchdog.cancel()
                        onSubscribed()
                    }
                default:
                    continue
                }
            }
            if !unconfirmed.isEmpty, !Task.isCancelled {
                throw NIODeadline.now() >= confirmationDeadline ? RESPError.timeout(command: "SUBSCRIBE") : .connectionClosed
            }
        } catch {
            await connection.close()
            throw error
        }
        if connection.isActive { try? await connection.sendWithoutReply(RESPCommand(["UNSUBSCRIBE"] + channels)) }
        await connection.close()
    }
}
