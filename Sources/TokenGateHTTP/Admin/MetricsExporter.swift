package import Prometheus
package import TokenGateCore

/// The Prometheus side of the gateway's metrics: the registry every instrument lands in (through
/// swift-metrics, with `PrometheusMetricsFactory` as the backend), and the text a scrape of `/metrics` gets.
package final class MetricsExporter: Sendable {
    /// Where the instruments live.
    package let registry: PrometheusCollectorRegistry
    /// The swift-metrics backend over ``registry``: `serve` bootstraps it process-wide; tests hand it to one gateway.
    package let factory: PrometheusMetricsFactory
    private let process: ProcessMetrics

    /// An exporter with an empty registry of its own.
    package init() {
        registry = PrometheusCollectorRegistry()
        var factory = PrometheusMetricsFactory(registry: registry)
        // Backend calls are milliseconds for a local signer, up to seconds for an upstream token server.
        factory.durationHistogramBuckets["tokengate_backend_call_duration_seconds"] = [
            .microseconds(500), .milliseconds(1), .milliseconds(2), .milliseconds(5), .milliseconds(10), .milliseconds(25),
            .milliseconds(50), .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .milliseconds(2500),
            .seconds(5), .seconds(10),
        ]
        self.factory = factory
        process = ProcessMetrics(registry: registry)
    }

    /// The exposition text (format 0.0.4) of every metric, with the gauges read now.
    package func scrape(_ service: TokenService) -> [UInt8] {
        service.updateGauges()
        process.update()
        var buffer: [UInt8] = []
        buffer.reserveCapacity(16 * 1024)
        registry.emit(into: &buffer)
        return buffer
    }
}
