import Foundation
import Prometheus
import Synchronization

#if canImport(Glibc)
    import Glibc
#endif

/// The standard `process_*` metrics of Prometheus client libraries, read from `/proc/self` at each scrape:
/// CPU seconds, resident and virtual memory, open and maximum file descriptors, start time. swift-prometheus has
/// none of its own. On a system without `/proc` they stay at zero.
final class ProcessMetrics: Sendable {
    private let cpuSeconds: Counter
    private let residentBytes: Gauge
    private let virtualBytes: Gauge
    private let openFileDescriptors: Gauge
    private let maxFileDescriptors: Gauge
    private let startTimeSeconds: Gauge
    /// CPU seconds already added to the counter (a counter only goes up by increments).
    private let countedCPUSeconds = Mutex<Double>(0)

    init(registry: PrometheusCollectorRegistry) {
        func name(_ metricName: String, _ help: String) -> MetricNameDescriptor {
            MetricNameDescriptor(namespace: "process", metricName: metricName, unitName: "", helpText: help)
        }
        cpuSeconds = registry.makeCounter(descriptor: name("cpu_seconds_total", "Total user and system CPU time spent in seconds."))
        residentBytes = registry.makeGauge(descriptor: name("resident_memory_bytes", "Resident memory size in bytes."))
        virtualBytes = registry.makeGauge(descriptor: name("virtual_memory_bytes", "Virtual memory size in bytes."))
        openFileDescriptors = registry.makeGauge(descriptor: name("open_fds", "Number of open file descriptors."))
        maxFileDescriptors = registry.makeGauge(descriptor: name("max_fds", "Maximum number of open file descriptors."))
        startTimeSeconds = registry.makeGauge(descriptor: name("start_time_seconds", "Start time of the process since unix epoch in seconds."))
    }

    func update() {
        #if os(Linux)
            guard let stat = try? String(contentsOfFile: "/proc/self/stat", encoding: .utf8),
                let afterName = stat.lastIndex(of: ")")
            else { return }
            // Fields after "(comm)": state is field 3 of proc(5), so index i here is field i + 3.
            let fields = stat[stat.index(after: afterName)...].split(separator: " ")
            guard fields.count > 22 else { return }
            let ticks = Double(sysconf(Int32(_SC_CLK_TCK)))
            let pageSize = Double(sysconf(Int32(_SC_PAGESIZE)))
            if let user = Double(fields[11]), let system = Double(fields[12]) {
                let total = (user + system) / ticks
                let delta = countedCPUSeconds.withLock { counted -> Double in
                    let delta = max(0, total - counted)
                    counted += delta
                    return delta
                }
                if delta > 0 { cpuSeconds.increment(by: delta) }
            }
            if let virtual = Double(fields[20]) { virtualBytes.set(virtual) }
            if let pages = Double(fields[21]) { residentBytes.set(pages * pageSize) }
            if let started = Double(fields[19]), let boot = Self.bootTime() { startTimeSeconds.set(boot + started / ticks) }
            if let descriptors = Self.countEntries(inDirectory: "/proc/self/fd") {
                // One of them is the directory being listed.
                openFileDescriptors.set(Double(max(0, descriptors - 1)))
            }
            var limit = rlimit()
            if getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 { maxFileDescriptors.set(Double(limit.rlim_cur)) }
        #endif
    }

    #if os(Linux)
        /// The entries of a directory other than `.` and `..`, or nil when it cannot be opened. Read with `readdir`
        /// and the name through a pointer: Foundation's `contentsOfDirectory` copies all 256 bytes of `d_name` out of
        /// each entry, and for an entry at the very end of glibc's buffer that read crossed into an unmapped page (a CI
        /// test process with some 1,400 descriptors open died in that copy, SIGSEGV in memcpy).
        static func countEntries(inDirectory path: String) -> Int? {
            guard let directory = opendir(path) else { return nil }
            defer { closedir(directory) }
            guard let nameOffset = MemoryLayout<dirent>.offset(of: \dirent.d_name) else { return nil }
            var count = 0
            while let entry = readdir(directory) {
                let name = (UnsafeRawPointer(entry) + nameOffset).assumingMemoryBound(to: UInt8.self)
                let dot = UInt8(ascii: ".")
                let isDotOrDotDot = name[0] == dot && (name[1] == 0 || (name[1] == dot && name[2] == 0))
                if !isDotOrDotDot { count += 1 }
            }
            return count
        }
    #endif

    /// The boot time, epoch seconds, from `/proc/stat`'s `btime` line.
    private static func bootTime() -> Double? {
        guard let text = try? String(contentsOfFile: "/proc/stat", encoding: .utf8) else { return nil }
        for line in text.split(separator: "\n") where line.hasPrefix("btime ") {
            return Double(line.dropFirst(6).trimmingCharacters(in: .whitespaces))
        }
        return nil
    }
}
