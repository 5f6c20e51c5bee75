extension AuthorizerSettings {
    /// Parses a client's `authorizer:` mapping; every error is located at the key it is about.
    static func parse(_ node: ConfigNode) throws -> AuthorizerSettings {
        let mapping = try node.mapping(allowedKeys: ["type", "url", "cacheFor", "timeout"])
        let typeNode = try mapping.required("type")
        let type = try typeNode.string()
        guard type == "http" else { throw typeNode.error("unknown authorizer type '\(type)'; expected http") }
        let urlNode = try mapping.required("url")
        let text = try urlNode.nonEmptyString()
        let template: AuthorizerURLTemplate
        do {
            template = try AuthorizerURLTemplate(parsing: text)
        } catch {
            throw urlNode.error(error.message)
        }
        try JWKSURL.checkPolicy(template.sample, at: urlNode, expecting: "the https:// URL of the tenant's authorizer")
        var settings = AuthorizerSettings(url: template)
        if let cacheNode = mapping.optional("cacheFor") {
            settings.cacheFor = try cacheNode.duration()
            guard cacheForRange.contains(settings.cacheFor) else {
                throw cacheNode.error("expected a duration from 0s (no caching) to 24h")
            }
        }
        if let timeoutNode = mapping.optional("timeout") {
            settings.timeout = try timeoutNode.duration()
            guard timeoutRange.contains(settings.timeout) else { throw timeoutNode.error("expected a timeout from 1ms to 10s") }
        }
        return settings
    }

    /// Warns, at the `url`, about each token type `allow` grants whose context the URL does not carry: the
    /// authorizer would not know which trip or vehicle it is asked about (the answer is still cached per context).
    func warnAboutMissingContext(for types: some Sequence<TokenType>, in section: ConfigNode) {
        let node = (try? section.entries())?.first { $0.key == "url" }?.node ?? section
        let used = url.placeholders
        guard !used.contains(.contextId) else { return }
        for type in Set(types).sorted() {
            let names: [AuthorizerURLTemplate.Placeholder] =
                switch type {
                case .consumer: [.tripId]
                case .driver: [.vehicleId]
                // A trusted driver is granted by its vehicle; the task is the token's scope, not the grant's.
                case .deliveryDriver, .trustedDeliveryDriver: [.deliveryVehicleId]
                case .deliveryConsumer: [.trackingId, .taskId]
                case .batchTasks: [.taskIds]
                case .fleetReader, .deliveryFleetReader, .server: []
                }
            let missing = names.filter { !used.contains($0) }
            guard !missing.isEmpty else { continue }
            let listed = missing.map { "{\($0.rawValue)}" }.joined(separator: ", ")
            node.warn(
                "the URL carries no context of \(type) tokens (add \(listed) or {contextId}): the authorizer cannot tell which one it is asked about")
        }
    }
}
