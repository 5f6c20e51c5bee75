import Foundation

#if canImport(Glibc)
    import Glibc
#elseif canImport(Darwin)
    import Darwin
#endif

/// One run of a program, no shell: its standard output and error into one pipe (read up to a cap), standard input
/// from /dev/null, and at the deadline the whole process group it leads killed (SIGKILL), so a script's children go
/// with it. The child starts with default signal dispositions and an empty signal mask: the gateway ignores or
/// blocks signals (SIGPIPE, the shutdown signals it handles itself), and a program inheriting that could neither
/// be stopped by them nor see a broken pipe.
///
/// The waiting happens on a thread of its own, never on the concurrency pool: a program may take minutes.
enum ChildProcess {
    /// How a run ended.
    enum Ending: Sendable, Equatable {
        case exited(Int32)
        case signalled(Int32)
        /// Killed at the deadline.
        case timedOut
        /// Killed for writing more than the cap.
        case outputTooLarge
    }

    struct Outcome: Sendable {
        let ending: Ending
        /// Standard output and standard error, interleaved as written.
        let output: [UInt8]
    }

    /// Runs `arguments[0]` (an absolute path) with `arguments` and exactly `environment`. A program that cannot
    /// be started is an `errno` value.
    static func run(
        _ arguments: [String], environment: [String: String], deadline: ContinuousClock.Instant, maxOutputBytes: Int
    ) async -> Result<Outcome, SpawnFailure> {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(returning: runBlocking(arguments, environment, deadline, maxOutputBytes))
            }
        }
    }

    /// `posix_spawn` failed with this `errno` (ENOENT: no such program; EACCES: not executable).
    struct SpawnFailure: Error, Sendable {
        let errno: Int32
        var reason: String { String(cString: strerror(errno)) }
    }

    private static func runBlocking(
        _ arguments: [String], _ environment: [String: String], _ deadline: ContinuousClock.Instant, _ maxOutputBytes: Int
    ) -> Result<Outcome, SpawnFailure> {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else { return .failure(SpawnFailure(errno: errno)) }
        let (readEnd, writeEnd) = (fds[0], fds[1])
        // Close-on-exec, so no program (this one, or one spawned meanwhile elsewhere) keeps the pipe but through
        // its 1 and 2; and no blocking read. A program spawned elsewhere in the instant between pipe and fcntl may
        // still hold it: the end of this run is the child's exit, never only the pipe's end of file.
        for fd in fds { _ = fcntl(fd, F_SETFD, FD_CLOEXEC) }
        _ = fcntl(readEnd, F_SETFL, O_NONBLOCK)
        defer { close(readEnd) }
        let spawned = spawn(arguments, environment, output: writeEnd)
        close(writeEnd)
        let pid: pid_t
        switch spawned {
        case .success(let child): pid = child
        case .failure(let failure): return .failure(failure)
        }
        var output: [UInt8] = []
        var status: Int32 = 0
        while true {
            let exited = waitpid(pid, &status, WNOHANG) == pid
            // Whatever is in the pipe now, then (once the child is gone) nothing more is waited for.
            let state = drain(readEnd, into: &output)
            if output.count > maxOutputBytes {
                return .success(Outcome(ending: terminate(pid, ending: .outputTooLarge, exited: exited), output: output))
            }
            if exited { return .success(Outcome(ending: decode(status), output: output)) }
            let remaining = deadline - ContinuousClock.now
            guard remaining > .zero else {
                return .success(Outcome(ending: terminate(pid, ending: .timedOut, exited: false), output: output))
            }
            let wait = Int32(min(50, max(1, remaining / .milliseconds(1))))
            if state == .endOfFile {
                // A closed pipe is always "readable": sleep instead, until the child is gone.
                usleep(UInt32(min(wait, 10)) * 1000)
            } else {
                // Woken by output, or after at most 50 ms to look at the child again.
                var poller = pollfd(fd: readEnd, events: Int16(POLLIN), revents: 0)
                _ = poll(&poller, 1, wait)
            }
        }
    }

    private enum PipeState {
        case open
        case endOfFile
    }

    /// Reads what the pipe holds without blocking.
    private static func drain(_ fd: Int32, into output: inout [UInt8]) -> PipeState {
        var buffer = [UInt8](repeating: 0, count: 16 * 1024)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress, $0.count) }
            if count > 0 {
                output += buffer[0..<count]
                continue
            }
            if count == 0 { return .endOfFile }
            if errno == EINTR { continue }
            return .open
        }
    }

    /// Kills the process group `pid` leads (POSIX_SPAWN_SETPGROUP with group 0: its own pid), so a script's
    /// children go too, and reaps `pid` unless it was reaped already.
    private static func terminate(_ pid: pid_t, ending: Ending, exited: Bool) -> Ending {
        _ = kill(-pid, SIGKILL)
        var status: Int32 = 0
        if !exited { while waitpid(pid, &status, 0) < 0, errno == EINTR {} }
        return ending
    }

    /// `WIFEXITED`/`WEXITSTATUS`/`WTERMSIG`, which are macros Swift does not import.
    private static func decode(_ status: Int32) -> Ending {
        let signal = status & 0x7F
        return signal == 0 ? .exited((status >> 8) & 0xFF) : .signalled(signal)
    }

    /// Starts `arguments` in a process group of its own, output to `output`, input from /dev/null.
    private static func spawn(_ arguments: [String], _ environment: [String: String], output: Int32) -> Result<pid_t, SpawnFailure> {
        #if canImport(Glibc)
            var actions = posix_spawn_file_actions_t()
            var attributes = posix_spawnattr_t()
        #else
            var actions: posix_spawn_file_actions_t? = nil
            var attributes: posix_spawnattr_t? = nil
        #endif
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        // dup2 clears close-on-exec on 1 and 2; the pipe's own descriptors close at exec.
        posix_spawn_file_actions_adddup2(&actions, output, 1)
        posix_spawn_file_actions_adddup2(&actions, output, 2)
        var noSignals = sigset_t()
        sigemptyset(&noSignals)
        var everySignal = sigset_t()
        sigfillset(&everySignal)
        sigdelset(&everySignal, SIGKILL)
        sigdelset(&everySignal, SIGSTOP)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &everySignal)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for string in argv + envp { free(string) }
        }
        guard let program = arguments.first else { return .failure(SpawnFailure(errno: EINVAL)) }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, program, &actions, &attributes, argv, envp)
        guard result == 0 else { return .failure(SpawnFailure(errno: result)) }
        return .success(pid)
    }
}
