import Synchronization

/// What requests are served from: a generation and its providers' pipelines, built together.
struct Serving: Sendable {
    let generation: GatewayGeneration
    let pipelines: [ProviderID: ProviderPipeline]

    init(_ generation: GatewayGeneration, formatter: TokenBodyWriterFactory, services: GatewayServices) {
        self.generation = generation
        self.pipelines = generation.providers.mapValues { runtime in
            ProviderPipeline(runtime, format: formatter(runtime.settings), services: services, apiKeyOwners: generation.apiKeyOwners)
        }
    }

    /// The pipeline of the provider a request names, if this generation serves it.
    func pipeline(named providerID: String) -> ProviderPipeline? {
        ProviderID(providerID).flatMap { pipelines[$0] }
    }

    func admit(_ query: TokenQuery) throws(TokenGateError) -> TokenAdmission {
        guard let pipeline = pipeline(named: query.providerID) else { throw TokenGateError(.unknownProvider, "no provider with that ID") }
        return try pipeline.admit(query)
    }
}

/// The one place the serving state is swapped and read: a request reads it once and finishes on what it read.
final class ServingSlot: Sendable {
    private let state: Mutex<Serving>
    init(_ serving: Serving) { state = Mutex(serving) }
    var serving: Serving {
        get { state.withLock { $0 } }
        set { state.withLock { $0 = newValue } }
    }
}
