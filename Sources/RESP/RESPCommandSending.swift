package import NIOCore

/// Something that sends commands and returns their replies: a ``RESPConnection`` or the pool, ``RESPClient``.
/// The typed commands the gateway uses are written once, here, for both.
///
/// ```swift
/// let acquired = try await client.set("lock:trip-1", to: owner, onlyIfAbsent: true, expiresIn: .seconds(10))
/// ```
package protocol RESPCommandSending: Sendable {
    /// Sends `command` and returns its reply; an error reply throws ``RESPError/server(_:)``, a reply that misses
    /// `deadline` (nil: the configured command timeout) throws ``RESPError/timeout(command:)``.
    @discardableResult
    func send(_ command: RESPCommand, deadline: Duration?) async throws -> RESPValue
}

extension RESPCommandSending {
    /// Sends a command given as text (`["INCR", "counter"]`).
    @discardableResult
    package func send(_ arguments: [String], deadline: Duration? = nil) async throws -> RESPValue {
        try await send(RESPCommand(arguments), deadline: deadline)
    }

    /// Sends a command given as bytes.
    @discardableResult
    package func send(_ arguments: [ByteBuffer], deadline: Duration? = nil) async throws -> RESPValue {
        try await send(RESPCommand(arguments), deadline: deadline)
    }

    /// `PING`: `PONG` when the server is up and this client may talk to it.
    @discardableResult
    package func ping(deadline: Duration? = nil) async throws -> String {
        let command = RESPCommand(["PING"])
        return try Self.extract(\.string, from: try await send(command, deadline: deadline), for: command)
    }

    /// `GET key`: the value, or nil when the key does not exist.
    package func get(_ key: String, deadline: Duration? = nil) async throws -> ByteBuffer? {
        let command = RESPCommand(["GET", key])
        let reply = try await send(command, deadline: deadline)
        if reply.isNull { return nil }
        return try Self.extract(\.bytes, from: reply, for: command)
    }

    /// `SET key value [NX] [PX ms]`: whether the value was set, which is false only when `onlyIfAbsent` (NX) and
    /// the key exists. With `expiresIn` the key expires after that long, to the millisecond (at least 1 ms).
    @discardableResult
    package func set(
        _ key: String, to value: ByteBuffer, onlyIfAbsent: Bool = false, expiresIn: Duration? = nil,
        deadline: Duration? = nil
    ) async throws -> Bool {
        var arguments = [ByteBuffer(string: "SET"), ByteBuffer(string: key), value]
        if onlyIfAbsent { arguments.append(ByteBuffer(string: "NX")) }
        if let expiresIn {
            let milliseconds = max(1, expiresIn / .milliseconds(1)).rounded(.up)
            arguments += [ByteBuffer(string: "PX"), ByteBuffer(string: String(Int64(milliseconds)))]
        }
        let command = RESPCommand(arguments)
        let reply = try await send(command, deadline: deadline)
        if reply.isNull { return false }  // NX and the key exists
        return try Self.extract({ $0.string == "OK" ? true : nil }, from: reply, for: command)
    }

    /// `SET` with a text value.
    @discardableResult
    package func set(
        _ key: String, to value: String, onlyIfAbsent: Bool = false, expiresIn: Duration? = nil,
        deadline: Duration? = nil
    ) async throws -> Bool {
        try await set(
            key, to: ByteBuffer(string: value), onlyIfAbsent: onlyIfAbsent, expiresIn: expiresIn, deadline: deadline)
    }

    /// `DEL key…`: how many of the keys existed.
    @discardableResult
    package func delete(_ keys: [String], deadline: Duration? = nil) async throws -> Int {
        let command = RESPCommand(["DEL"] + keys)
        return Int(try Self.extract(\.integer, from: try await send(command, deadline: deadline), for: command))
    }

    /// `PUBLISH channel message`: how many subscribers received it (on this server, or cluster node).
    @discardableResult
    package func publish(_ message: ByteBuffer, to channel: String, deadline: Duration? = nil) async throws -> Int {
        let command = RESPCommand([ByteBuffer(string: "PUBLISH"), ByteBuffer(string: channel), message])
        return Int(try Self.extract(\.integer, from: try await send(command, deadline: deadline), for: command))
    }

    /// `PUBLISH` with a text message.
    @discardableResult
    package func publish(_ message: String, to channel: String, deadline: Duration? = nil) async throws -> Int {
        try await publish(ByteBuffer(string: message), to: channel, deadline: deadline)
    }

    /// What `read` finds in `reply`, or ``RESPError/unexpectedReply(command:reply:)`` when the reply has another shape.
    static func extract<Value>(_ read: (RESPValue) -> Value?, from reply: RESPValue, for command: RESPCommand)
        throws(RESPError) -> Value
    {
        guard let value = read(reply) else {
            throw .unexpectedReply(command: command.name, reply: String(String(describing: reply).prefix(64)))
        }
        return value
    }
}
