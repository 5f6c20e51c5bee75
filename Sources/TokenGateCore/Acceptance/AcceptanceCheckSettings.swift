/// `acceptanceCheck:` of a provider: every so often the gateway mints a token of each listed type and makes one
/// read-only Fleet Engine call with it, to learn whether Fleet Engine accepts the tenant's tokens (its accounts'
/// roles, the project, the claims) before the tenant's riders find out. Off unless configured.
///
/// ```yaml
/// acceptanceCheck:
///   tokenTypes: [consumer, driver]          # required: which of the provider's token types to check
///   every: 10m                              # the default; at least 1s, at most 24h
///   id: tokengate-acceptance-check          # the trip / vehicle / tracking ID the probe's tokens are for
///   endpoint: https://fleetengine.googleapis.com   # the default
///   timeout: 10s                            # the default: each Fleet Engine call's deadline
/// ```
///
/// The ID should name nothing real: Fleet Engine then answers 404, which it does only after the token passed
/// authentication and authorisation. A backend that serves tokens for known contexts only (a file source, some
/// upstream servers) needs an ID it has a token for; a 200 is an acceptance too.
package struct AcceptanceCheckSettings: Sendable, Equatable {
    /// The token types checked, in the order given.
    package var tokenTypes: [TokenType]
    /// How often.
    package var interval: Duration
    /// The ID every probe's context names.
    package var contextID: ContextID
    /// Fleet Engine's base URL, without a trailing slash.
    package var endpoint: String
    /// Each call's deadline.
    package var timeout: Duration

    /// Fleet Engine's REST endpoint.
    package static let fleetEngineEndpoint = "https://fleetengine.googleapis.com"
    /// The ID probes are for unless configured: a name no trip, vehicle or shipment is likely to have.
    package static let defaultContextID = ContextID("tokengate-acceptance-check")!
    static let keys: Set<String> = ["tokenTypes", "every", "id", "endpoint", "timeout"]

    /// Settings checking `tokenTypes` with every default.
    package init(
        tokenTypes: [TokenType], interval: Duration = .seconds(600), contextID: ContextID = defaultContextID,
        endpoint: String = fleetEngineEndpoint, timeout: Duration = .seconds(10)
    ) {
        self.tokenTypes = tokenTypes
        self.interval = interval
        self.contextID = contextID
        self.endpoint = endpoint
        self.timeout = timeout
    }

    static func parse(_ node: ConfigNode) throws -> AcceptanceCheckSettings {
        let mapping = try node.mapping(allowedKeys: keys)
        let typesNode = try mapping.required("tokenTypes")
        var types: [TokenType] = []
        for name in try typesNode.stringList() {
            guard let type = TokenType(rawValue: name) else {
                throw typesNode.error("unknown token type '\(name)'; expected some of: \(TokenType.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            guard AcceptanceProbe.checks(type) else {
                throw typesNode.error("\(type) tokens only create tasks: Fleet Engine has no read-only call that checks them")
            }
            guard !types.contains(type) else { throw typesNode.error("\(type) is listed twice") }
            types.append(type)
        }
        guard !types.isEmpty else { throw typesNode.error("list at least one token type to check") }
        var settings = AcceptanceCheckSettings(tokenTypes: types)
        if let node = mapping.optional("every") {
            settings.interval = try node.duration()
            guard settings.interval >= .seconds(1), settings.interval <= .seconds(86_400) else { throw node.error("must be between 1s and 24h") }
        }
        if let node = mapping.optional("id") {
            let text = try node.nonEmptyString()
            guard let id = ContextID(text) else { throw node.error("'\(text)' is not an ID Fleet Engine accepts") }
            settings.contextID = id
        }
        if let node = mapping.optional("endpoint") {
            var text = try node.nonEmptyString()
            try JWKSURL.checkPolicy(text, at: node, expecting: "Fleet Engine's https:// endpoint")
            while text.hasSuffix("/") { text.removeLast() }
            settings.endpoint = text
        }
        if let node = mapping.optional("timeout") {
            settings.timeout = try node.duration()
            guard settings.timeout >= .seconds(1), settings.timeout <= .seconds(60) else { throw node.error("must be between 1s and 60s") }
        }
        return settings
    }
}
