import Logging
import ServiceLifecycle
import TokenGateCore
import Tracing

#if OpenTelemetry
    import OTel

    /// The `tracing:` section made real: swift-otel's tracer, exporting over OTLP/HTTP (protobuf), bootstrapped as the
    /// process's tracer so that Hummingbird's server spans, the gateway's own and AsyncHTTPClient's client spans (with
    /// the `traceparent` they send upstream) all belong to one trace. No URL query and no error's text is
    /// exported (``RedactingTracer``).
    enum OpenTelemetryTracing {
        /// Bootstraps the process's tracer from `settings` and returns it with the service that exports its spans (run
        /// it in the service group, first, so it is shut down last and flushes what the listeners recorded). Must run
        /// before any HTTP client is made: a client keeps the tracer it saw when it was created.
        ///
        /// The standard `OTEL_*` variables (`OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`, `OTEL_BSP_SCHEDULE_DELAY`, …)
        /// override the file, as in every OpenTelemetry SDK; without a `tracing:` section they turn nothing on.
        static func bootstrap(_ settings: TracingSettings, logger: Logger) throws -> (tracer: any Tracer, exporter: any Service) {
            var configuration = OTel.Configuration.default
            configuration.serviceName = settings.serviceName
            configuration.diagnosticLogger = .custom(logger)
            configuration.propagators = [.traceContext]
            configuration.metrics.enabled = false
            configuration.logs.enabled = false
            configuration.traces.enabled = true
            // The ratio is the gateway's (``TraceSampler``, at each request's door): what reaches the exporter is sampled.
            configuration.traces.sampler = .parentBasedAlwaysOn
            configuration.traces.exporter = .otlp
            configuration.traces.otlpExporter.endpoint = settings.endpoint
            configuration.traces.otlpExporter.protocol = .httpProtobuf
            configuration.traces.otlpExporter.headers = settings.headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
            configuration.traces.otlpExporter.timeout = settings.timeout
            let backend = try OTel.makeTracingBackend(configuration: configuration)
            let tracer = RedactingTracer(backend.factory, sampler: TraceSampler(ratio: settings.sampleRatio))
            InstrumentationSystem.bootstrap(tracer)
            return (tracer, backend.service)
        }
    }
#else
    /// A build without the `OpenTelemetry` trait (the sanitizer builds) has no exporter: `tracing:` is refused at start.
    enum OpenTelemetryTracing {
        static func bootstrap(_ settings: TracingSettings, logger: Logger) throws -> (tracer: any Tracer, exporter: any Service) {
            throw CLIFailure(.usage, "this build of tokengate has no OpenTelemetry exporter (built without the OpenTelemetry trait)")
        }
    }
#endif
