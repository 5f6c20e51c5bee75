/// `events:` of a provider: Fleet Engine's own log entries, routed by a log sink to a Pub/Sub topic whose push
/// subscription posts them to the admin listener, end the provider's trips, tasks and vehicles as they finish.
///
/// ```yaml
/// events:
///   audience: https://tokengate.example.com/events/v1/pubsub/acme-rides   # the push subscription's audience
///   serviceAccount: fleet-events-push@acme-rides.iam.gserviceaccount.com  # its push identity
///   endOn:                                   # these are the defaults
///     consumer: [complete, canceled]         # trip status
///     delivery-consumer: [succeeded, failed, closed]   # task outcome, or the task closed
///     driver: []                             # vehicle state: [offline] ends it; back online lifts it
/// ```
package struct FleetEventSettings: Sendable, Equatable {
    /// The `aud` the push subscription puts in its OIDC token.
    package var audience: String
    /// The service account the push subscription signs as (`email`, verified).
    package var serviceAccount: String
    /// Where Google publishes the keys of its OIDC tokens.
    package var keysURL: JWKSURL
    /// Which trip statuses end a trip's consumer tokens.
    package var tripStatuses: Set<TripEnd>
    /// Which task outcomes or states end a task's (and a delivery's tracking ID's) delivery-consumer tokens.
    package var taskEnds: Set<TaskEnd>
    /// Whether a vehicle going offline ends its driver tokens (and coming back online lifts that).
    package var endsOfflineVehicles: Bool

    /// A trip status that ends the trip.
    package enum TripEnd: String, Sendable, CaseIterable {
        case complete, canceled
    }

    /// A task outcome or state that ends the task.
    package enum TaskEnd: String, Sendable, CaseIterable {
        case succeeded, failed, closed
    }

    /// Google's OIDC keys.
    package static let googleKeysURL = "https://www.googleapis.com/oauth2/v3/certs"

    static let keys: Set<String> = ["audience", "serviceAccount", "keysUrl", "endOn"]

    static func parse(_ node: ConfigNode) throws -> FleetEventSettings {
        let mapping = try node.mapping(allowedKeys: keys)
        let accountNode = try mapping.required("serviceAccount")
        let account = try accountNode.nonEmptyString()
        guard account.contains("@") else { throw accountNode.error("expected the push subscription's service account email") }
        let audienceNode = try mapping.required("audience")
        let audience = try audienceNode.nonEmptyString()
        var keysURL = JWKSURL(checked: googleKeysURL)
        if let node = mapping.optional("keysUrl") { keysURL = try JWKSURL.parse(node, refreshInterval: nil) }
        var settings = FleetEventSettings(
            audience: audience, serviceAccount: account, keysURL: keysURL, tripStatuses: Set(TripEnd.allCases),
            taskEnds: Set(TaskEnd.allCases), endsOfflineVehicles: false)
        if let node = mapping.optional("endOn") {
            let endOn = try node.mapping(allowedKeys: ["consumer", "delivery-consumer", "driver"])
            if let list = endOn.optional("consumer") { settings.tripStatuses = try words(list, TripEnd.self) }
            if let list = endOn.optional("delivery-consumer") { settings.taskEnds = try words(list, TaskEnd.self) }
            if let list = endOn.optional("driver") {
                let states = try list.stringList()
                guard states.allSatisfy({ $0 == "offline" }) else { throw list.error("expected [] or [offline]") }
                settings.endsOfflineVehicles = !states.isEmpty
            }
        }
        return settings
    }

    private static func words<Word: RawRepresentable & CaseIterable & Hashable>(_ node: ConfigNode, _: Word.Type) throws -> Set<Word>
    where Word.RawValue == String {
        var result: Set<Word> = []
        for text in try node.stringList() {
            guard let word = Word(rawValue: text) else {
                throw node.error("unknown '\(text)'; expected some of: \(Word.allCases.map(\.rawValue).joined(separator: ", "))")
            }
            result.insert(word)
        }
        return result
    }
}
