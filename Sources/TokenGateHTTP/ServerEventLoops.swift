import Foundation
import NIOCore
package import NIOPosix
package import TokenGateCore

/// The event loops the listeners run on: one thread per CPU the process may use, unless `server.eventLoops` says.
package enum ServerEventLoops {
    /// The CPUs this process may run on: NIO's count (the cgroup's CPU quota and cpuset), lowered to the
    /// scheduler's affinity mask (`taskset`, systemd's `CPUAffinity=`), which NIO does not read. A gateway pinned
    /// to one CPU then runs one loop, rather than one per CPU of the machine taking turns on that one.
    package static var usableCPUs: Int {
        min(System.coreCount, affinityCPUs ?? System.coreCount)
    }

    /// How many loops serve `server`: `server.eventLoops`, or one per usable CPU.
    package static func count(for server: ServerSettings) -> Int {
        server.eventLoops ?? usableCPUs
    }

    /// The group of ``count(for:)`` loops for `server`.
    package static func makeGroup(for server: ServerSettings) -> MultiThreadedEventLoopGroup {
        MultiThreadedEventLoopGroup(numberOfThreads: count(for: server))
    }

    /// How many CPUs a list such as `0-3,8,10-11` (`Cpus_allowed_list` in `/proc/self/status`) names; nil when it
    /// is not one.
    static func count(ofCPUList list: Substring) -> Int? {
        var count = 0
        for range in list.split(separator: ",") {
            let bounds = range.split(separator: "-", omittingEmptySubsequences: false)
            guard (1...2).contains(bounds.count), let low = Int(bounds[0]), let high = Int(bounds[bounds.count - 1]), low <= high else {
                return nil
            }
            count += high - low + 1
        }
        return count > 0 ? count : nil
    }

    private static var affinityCPUs: Int? {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("Cpus_allowed_list:") })
        else { return nil }
        return count(ofCPUList: line.dropFirst("Cpus_allowed_list:".count).drop(while: { $0 == " " || $0 == "\t" }))
    }
}
