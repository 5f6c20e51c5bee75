/// `events:` of a provider: Fleet Engine's own log entries, routed by a log sink to a Pub/Sub topic whose push
/// subscription posts them to the admin listener, end the provider's trips, tasks and vehicles as they finish.
///
/// ```yaml
/// events:
///   audience: https://tokengate.example.com/events/v1/pubsub/acme-rides   # the push subscription's audience
///   serviceAccount: fleet-events-push@acme-rides.iam.gserviceaccount.com  # its push identity
///   endOn:                                   # these are the defaults
///     consumer: [complete, canceled, deleted]          # trip status, or the trip deleted
///     delivery-consumer: [succeeded, failed, closed, deleted]   # task outcome, the task closed or deleted
///     driver: [deleted]                      # the vehicle deleted; offline: going offline ends it, online lifts it
///     delivery-driver: [deleted]             # the delivery vehicle deleted (it has no state that ends it)
/// ```
///
/// Each list replaces its default: a list without `deleted` does not end on a deletion. An entity created again
/// with the same ID (its `Create…Log`) lifts the end an older event made.
package struct FleetEventSettings: Sendable, Equatable {
    /// The `aud` the push subscription puts in its OIDC token.
    package var audience: String
    /// The service account the push subscription signs as (`email`, verified).
    package var serviceAccount: String
    /// Where Google publishes the keys of its OIDC tokens.
    package var keysURL: JWKSURL
    /// Which trip statuses (or its deletion) end a trip's consumer tokens.
    package var tripStatuses: Set<TripEnd>
    /// Which task outcomes or states (or its deletion) end a task's (and a delivery's tracking ID's) delivery-consumer
    /// tokens.
    package var taskEnds: Set<TaskEnd>
    /// What ends a vehicle's driver tokens: going offline (and coming back online lifts that), its deletion.
    package var vehicleEnds: Set<VehicleEnd>
    /// What ends a delivery vehicle's delivery-driver tokens (both kinds): its deletion.
    package var deliveryVehicleEnds: Set<DeliveryVehicleEnd>

    /// A trip status that ends the trip, or its deletion.
    package enum TripEnd: String, Sendable, CaseIterable {
        case complete, canceled, deleted
    }

    /// A task outcome or state that ends the task, or its deletion.
    package enum TaskEnd: String, Sendable, CaseIterable {
        case succeeded, failed, closed, deleted
    }

    /// A vehicle state that ends the vehicle, or its deletion.
    package enum VehicleEnd: String, Sendable, CaseIterable {
        case offline, deleted
    }

    /// What ends a delivery vehicle: only its deletion (Fleet Engine's delivery vehicles have no online state).
    package enum DeliveryVehicleEnd: String, Sendable, CaseIterable {
        case deleted
    }

    /// The settings with every default `endOn`.
    package init(audience: String, serviceAccount: String, keysURL: JWKSURL) {
        self.audience = audience
        self.serviceAccount = serviceAccount
        self.keysURL = keysURL
        tripStatuses = Set(TripEnd.allCases)
        taskEnds = Set(TaskEnd.allCases)
        vehicleEnds = [.deleted]
        deliveryVehicleEnds = [.deleted]
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
        var settings = FleetEventSettings(audience: audience, serviceAccount: account, keysURL: keysURL)
        if let node = mapping.optional("endOn") {
            let endOn = try node.mapping(allowedKeys: ["consumer", "delivery-consumer", "driver", "delivery-driver"])
            if let list = endOn.optional("consumer") { settings.tripStatuses = try words(list, TripEnd.self) }
            if let list = endOn.optional("delivery-consumer") { settings.taskEnds = try words(list, TaskEnd.self) }
            if let list = endOn.optional("driver") { settings.vehicleEnds = try words(list, VehicleEnd.self) }
            if let list = endOn.optional("delivery-driver") { settings.deliveryVehicleEnds = try words(list, DeliveryVehicleEnd.self) }
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
