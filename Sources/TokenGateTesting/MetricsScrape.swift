/// One scrape, as Prometheus reads it: every sample by name and label set.
package struct MetricsScrape: Sendable {
    /// Every sample, by series with its labels sorted.
    package let samples: [String: Double]

    /// Reads a scrape in the Prometheus text format.
    package init(_ text: String) {
        var samples: [String: Double] = [:]
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else { continue }
            samples[Self.key(String(line[..<space]))] = value
        }
        self.samples = samples
    }

    /// The value of `name` with exactly `labels`, or nil if the series does not exist.
    package subscript(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        let rendered = labels.isEmpty ? name : name + "{" + labels.map { "\($0.key)=\"\($0.value)\"" }.joined(separator: ",") + "}"
        return samples[Self.key(rendered)]
    }

    /// A series name with its labels sorted, so label order does not matter.
    package static func key(_ series: String) -> String {
        guard let open = series.firstIndex(of: "{"), series.hasSuffix("}") else { return series }
        let labels = series[series.index(after: open)..<series.index(before: series.endIndex)]
            .split(separator: ",").map(String.init).sorted()
        return series[..<open] + "{" + labels.joined(separator: ",") + "}"
    }
}
