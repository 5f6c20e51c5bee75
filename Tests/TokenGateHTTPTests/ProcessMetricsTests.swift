#if os(Linux)
    import Foundation
    import Glibc
    import Testing
    @testable import TokenGateHTTP

    @Suite struct ProcessMetricsTests {
        /// Enough names to fill glibc's 32 KiB directory buffer many times over, so entries land at its very end
        /// (where Foundation's listing once read past the mapping).
        @Test func aLargeDirectoryIsCountedWithoutDotEntries() throws {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("tokengate-fd-count-\(UUID())")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: false)
            defer { try? FileManager.default.removeItem(at: directory) }
            for index in 0..<3_000 {
                #expect(FileManager.default.createFile(atPath: directory.appendingPathComponent("\(index)").path, contents: nil))
            }
            #expect(ProcessMetrics.countEntries(inDirectory: directory.path) == 3_000)
            #expect(ProcessMetrics.countEntries(inDirectory: directory.appendingPathComponent("missing").path) == nil)
        }

        @Test func openDescriptorsAreCountedAsTheyOpen() throws {
            let before = try #require(ProcessMetrics.countEntries(inDirectory: "/proc/self/fd"))
            let pipes = (0..<200).map { _ -> [Int32] in
                var ends: [Int32] = [0, 0]
                _ = pipe(&ends)
                return ends
            }
            defer { for ends in pipes { for end in ends { close(end) } } }
            let after = try #require(ProcessMetrics.countEntries(inDirectory: "/proc/self/fd"))
            // Other tests open and close descriptors meanwhile; 400 new ones still show.
            #expect(after - before > 300)
        }
    }
#endif
