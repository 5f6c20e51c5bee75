#if os(Linux)
    import Foundation
    import NIOCore
    import Testing
    import TokenGateTesting

    @testable import TokenGateHTTP

    /// How many event loops serve the listeners by default: one per CPU the process may run on.
    @Suite struct ServerEventLoopsTests {
        @Test(arguments: [("0", 1), ("0-3", 4), ("0-3,8,10-11", 7), ("1,3,5", 3), ("", nil), ("3-1", nil), ("0-", nil), ("a-b", nil), ("0-1-2", nil)])
        func cpuListsAreCounted(list: String, count: Int?) {
            #expect(ServerEventLoops.count(ofCPUList: Substring(list)) == count)
        }

        /// The count agrees with coreutils' `nproc`, which reads the affinity mask too (NIO's count is the cgroup's).
        @Test func usableCPUsAreTheAffinityMasksWithinTheCgroupsLimit() async throws {
            let nproc = try await ChildProcess.run("nproc", [], mergingErrors: false)
            let affinity = try #require(Int(nproc.output.trimmingCharacters(in: .whitespacesAndNewlines)))
            #expect(ServerEventLoops.usableCPUs == min(affinity, System.coreCount))
        }
    }
#endif
