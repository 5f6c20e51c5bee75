import NIOCore
import NIOPosix
import RESP
import RESPTesting
import Testing

/// `send` multiplexes: concurrent commands share one connection per event loop, each reply goes to its own command,
/// and a command sent from a loop's thread goes out on that loop's connection.
@Suite(.timeLimit(.minutes(2)))
struct SharedConnectionTests {
    @Test func concurrentCommandsShareOneConnectionPerLoopAndEachGetsItsOwnReply() async throws {
        try await Self.withClient(loops: 2) { server, client in
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 0..<2_000 {
                    group.addTask {
                        let reply = try await client.send(["ECHO", "value-\(index)"]).string
                        #expect(reply == "value-\(index)")
                    }
                }
                try await group.waitForAll()
            }
            try await server.withClient { observer in
                let count = try await RedisServer.clientCount(observer)
                #expect(count == 2 + 1)
            }
        }
    }

    @Test func aCommandSentFromALoopGoesOutOnThatLoopsConnection() async throws {
        try await Self.withClient(loops: 2) { _, client in
            var connectionOfLoop: [Int64] = []
            for loop in client.eventLoopGroup.makeIterator() {
                let executor = LoopExecutor(loop)
                let first = try await Task(executorPreference: executor) { try await client.send(["CLIENT", "ID"]).integer }.value
                let second = try await Task(executorPreference: executor) { try await client.send(["CLIENT", "ID"]).integer }.value
                #expect(first == second)
                connectionOfLoop.append(try #require(first))
            }
            #expect(Set(connectionOfLoop).count == 2)
            // From a thread of no loop, commands take the connections in turn.
            let first = try await client.send(["CLIENT", "ID"]).integer
            let second = try await client.send(["CLIENT", "ID"]).integer
            #expect(first != second)
            #expect(Set([first, second].compactMap { $0 }) == Set(connectionOfLoop))
        }
    }

    private static func withClient(
        loops count: Int, _ body: (RedisServer, RESPClient) async throws -> Void
    ) async throws {
        let loops = MultiThreadedEventLoopGroup(numberOfThreads: count)
        do {
            try await RedisServer.with { server in
                let client = try RESPClient(configuration: server.configuration(), eventLoopGroup: loops)
                do {
                    try await body(server, client)
                    await client.shutdown()
                } catch {
                    await client.shutdown()
                    throw error
                }
            }
        } catch {
            try await loops.shutdownGracefully()
            throw error
        }
        try await loops.shutdownGracefully()
    }
}

/// Runs a task's jobs on one event loop's thread, as the gateway runs a request's task on the loop that read it.
private final class LoopExecutor: TaskExecutor {
    let eventLoop: any EventLoop

    init(_ eventLoop: any EventLoop) { self.eventLoop = eventLoop }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
