import Dispatch
import Foundation

#if canImport(Glibc)
    import Glibc

    private func closeDescriptor(_ descriptor: Int32) { _ = Glibc.close(descriptor) }
    private func sendBytes(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
        Glibc.send(descriptor, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL))
    }
#elseif canImport(Darwin)
    import Darwin

    private func closeDescriptor(_ descriptor: Int32) { _ = Darwin.close(descriptor) }
    private func sendBytes(_ descriptor: Int32, _ bytes: UnsafeRawBufferPointer) -> Int {
        Darwin.send(descriptor, bytes.baseAddress, bytes.count, 0)
    }
#endif

/// A plain TCP connection to 127.0.0.1, for what an HTTP client library will not send: malformed requests, missing
/// or repeated `Host`, bytes dribbled one at a time, connections held open.
///
/// Every wait is bounded: reads give up after `receiveTimeout`, writes after the same time. The socket calls block,
/// so they run on the connection's own serial dispatch queue, never on the Swift concurrency pool, whose few
/// threads (one per core) the gateway under test needs to answer.
package final class RawConnection: @unchecked Sendable {  // all mutable state is touched on `queue` only
    /// Why a raw connection failed.
    package struct Failure: Error, CustomStringConvertible {
        /// What failed, with `errno`.
        package let description: String
    }

    /// What was read until the connection ended or went quiet.
    package struct Drain: Sendable {
        /// Every byte received.
        package var bytes: [UInt8]
        /// Whether the server closed (or reset) the connection; `false` means it stayed open past the timeout.
        package var closed: Bool
    }

    private let socket: BlockingSocket
    private let queue = DispatchQueue(label: "tokengate.raw-connection")

    private init(socket: BlockingSocket) {
        self.socket = socket
    }

    /// Connects to `127.0.0.1:port`. The default timeout is the HTTP client's (30 s): a bound, not an expected time.
    /// With the whole suite running in one process, a request the router answers waits for a thread of the shared
    /// concurrency pool, and reads of 8 s were measured; 10 s failed a CI run.
    /// With `source`, the connection comes from that loopback address (`0x7F00_0002` is 127.0.0.2, any of
    /// 127.0.0.0/8 works on Linux): one test can be many clients.
    package static func open(port: Int, from source: UInt32? = nil, receiveTimeout: Duration = .seconds(30)) async throws -> RawConnection {
        let queue = DispatchQueue(label: "tokengate.raw-connect")
        let socket = try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try BlockingSocket(port: port, source: source, timeout: receiveTimeout) }) }
        }
        return RawConnection(socket: socket)
    }

    deinit { socket.close() }

    /// Sends `text`; returns `false` if the server had already closed the connection.
    @discardableResult
    package func send(_ text: String) async throws -> Bool {
        try await send(Array(text.utf8))
    }

    /// Sends `bytes`; returns `false` if the server had already closed the connection.
    @discardableResult
    package func send(_ bytes: [UInt8]) async throws -> Bool {
        try await run { try $0.send(bytes) }
    }

    /// Reads one HTTP/1.1 response (head, then a `Content-Length` body); `nil` if the connection ended or stayed
    /// quiet first.
    package func readResponse() async throws -> RawResponse? {
        try await run { try $0.readResponse(withBody: true) }
    }

    /// Reads one response's head only (an answer to HEAD has a `Content-Length` but no body); `nil` as above.
    package func readHeadOnly() async throws -> RawResponse? {
        try await run { try $0.readResponse(withBody: false) }
    }

    /// Reads until the server closes the connection or nothing arrives for the receive timeout.
    package func drain() async throws -> Drain {
        try await run { try $0.drain() }
    }

    /// Closes the connection (also done on deinit).
    package func close() async {
        await run { $0.close() }
    }

    private func run<T: Sendable>(_ body: @escaping @Sendable (BlockingSocket) throws -> T) async throws -> T {
        let socket = self.socket
        return try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try body(socket) }) }
        }
    }

    private func run(_ body: @escaping @Sendable (BlockingSocket) -> Void) async {
        let socket = self.socket
        await withCheckedContinuation { continuation in
            queue.async {
                body(socket)
                continuation.resume()
            }
        }
    }
}

/// The socket itself: blocking calls with send and receive timeouts. Used on one serial queue at a time.
private final class BlockingSocket: @unchecked Sendable {  // confined to its RawConnection's serial queue
    private let descriptor: Int32
    private var buffer: [UInt8] = []
    private var isClosed = false

    init(port: Int, source: UInt32?, timeout: Duration) throws {
        #if canImport(Darwin)
            descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #else
            descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #endif
        guard descriptor >= 0 else { throw RawConnection.Failure(description: "socket: errno \(errno)") }
        #if canImport(Darwin)
            var one: Int32 = 1
            setsockopt(descriptor, SOL_SOCKET, SO_NOSIGPIPE, &one, socklen_t(MemoryLayout<Int32>.size))
        #endif
        var time = timeval()
        time.tv_sec = .init(timeout.components.seconds)
        time.tv_usec = .init(timeout.components.attoseconds / 1_000_000_000_000)
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr = in_addr(s_addr: source.bigEndian)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                let code = errno
                close()
                throw RawConnection.Failure(description: "bind to source address: errno \(code)")
            }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(port).bigEndian)
        address.sin_addr = in_addr(s_addr: UInt32(0x7F00_0001).bigEndian)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            let code = errno
            // close(), not the bare call: deinit runs when this throws, and must not close the number again (by
            // then another test's new socket may have it: it failed a bind with EBADF once).
            close()
            throw RawConnection.Failure(description: "connect: errno \(code)")
        }
    }

    deinit { close() }

    func send(_ bytes: [UInt8]) throws -> Bool {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { sendBytes(descriptor, $0) }
            if sent < 0 {
                if errno == EPIPE || errno == ECONNRESET { return false }
                throw RawConnection.Failure(description: "send: errno \(errno)")
            }
            offset += sent
        }
        return true
    }

    func readResponse(withBody: Bool) throws -> RawResponse? {
        while true {
            if let response = RawResponse.parse(&buffer, withBody: withBody) { return response }
            guard try fill() else { return nil }
        }
    }

    func drain() throws -> RawConnection.Drain {
        var bytes = buffer
        buffer = []
        while true {
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                bytes += chunk[..<count]
                continue
            }
            if count == 0 || errno == ECONNRESET { return .init(bytes: bytes, closed: true) }
            if errno == EAGAIN || errno == EWOULDBLOCK { return .init(bytes: bytes, closed: false) }
            if errno == EINTR { continue }
            throw RawConnection.Failure(description: "recv: errno \(errno)")
        }
    }

    func close() {
        guard !isClosed else { return }
        isClosed = true
        closeDescriptor(descriptor)
    }

    /// Reads more into the buffer; `false` at end of stream, reset or timeout.
    private func fill() throws -> Bool {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if count > 0 {
                buffer += chunk[..<count]
                return true
            }
            if count == 0 || errno == ECONNRESET || errno == EAGAIN || errno == EWOULDBLOCK { return false }
            if errno != EINTR { throw RawConnection.Failure(description: "recv: errno \(errno)") }
        }
    }
}

/// An HTTP/1.1 response read off a ``RawConnection``.
package struct RawResponse: Sendable {
    /// The status code.
    package let status: Int
    /// The header fields, in order.
    package let headers: [(String, String)]
    /// The body.
    package let body: [UInt8]
    /// The response as it came off the wire: status line, header fields and body.
    package internal(set) var bytes: [UInt8] = []

    /// Every value of the field `name` (case-insensitive).
    package func values(_ name: String) -> [String] {
        headers.filter { $0.0.lowercased() == name.lowercased() }.map(\.1)
    }

    /// The first value of the field `name` (case-insensitive).
    package func header(_ name: String) -> String? { values(name).first }

    /// The body as text.
    package var text: String { String(decoding: body, as: UTF8.self) }

    /// Takes one complete response off the front of `buffer`, or leaves it and returns `nil`.
    static func parse(_ buffer: inout [UInt8], withBody: Bool = true) -> RawResponse? {
        let separator: [UInt8] = Array("\r\n\r\n".utf8)
        guard let end = buffer.indices.dropLast(3).first(where: { buffer[$0..<$0 + 4].elementsEqual(separator) }) else { return nil }
        let lines = String(decoding: buffer[..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ")
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else { return nil }
        let headers = lines.dropFirst().compactMap { line -> (String, String)? in
            guard let colon = line.firstIndex(of: ":") else { return nil }
            return (String(line[..<colon]), line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces))
        }
        let length = withBody ? headers.first { $0.0.lowercased() == "content-length" }.flatMap { Int($0.1) } ?? 0 : 0
        let bodyStart = end + 4
        guard buffer.count >= bodyStart + length else { return nil }
        let body = Array(buffer[bodyStart..<bodyStart + length])
        var response = RawResponse(status: status, headers: headers, body: body)
        response.bytes = Array(buffer[..<(bodyStart + length)])
        buffer.removeFirst(bodyStart + length)
        return response
    }
}
