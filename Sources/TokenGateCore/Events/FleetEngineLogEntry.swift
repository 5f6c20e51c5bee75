import JOSE

/// What one Fleet Engine Cloud Logging entry says about an entity's state, read from its `jsonPayload` as Fleet
/// Engine logs it: the `@type` (`type.googleapis.com/maps.fleetengine.v1.UpdateTripLog` and the like), the `request`,
/// and the `response` (the entity as it is after the call, named `providers/{project}/{kind}/{id}`), or
/// `errorResponse` when the call failed. Only the fields that can end or lift a context are read; any other entry is
/// `unrelated`.
///
/// A deletion's call returns nothing, so its entry has no `response`: the entity is named by its request, as the
/// logging reference spells a request's ID (`tripId`, `vehicleId`, `taskId`, `deliveryVehicleId`, with the project
/// of the entry's `logName`), or by the `name` the API's own request carries. A delivery vehicle has no state that
/// ends it (Fleet Engine's `DeliveryVehicle` has no online or offline state, only a navigation status): only its
/// deletion does.
enum FleetEngineLogEntry: Equatable {
    /// A trip, with its status (`TRIP_STATUS_COMPLETE`, …); `created` for a `CreateTripLog`.
    case trip(project: String, id: ContextID, status: String, created: Bool = false)
    /// An on-demand vehicle, with its state (`VEHICLE_STATE_OFFLINE`, …).
    case vehicle(project: String, id: ContextID, state: String, created: Bool = false)
    /// A delivery task, with its state, outcome, type and the shipment's tracking ID.
    case task(project: String, id: ContextID, state: String?, outcome: String?, type: String?, trackingID: ContextID?, created: Bool = false)
    /// A delivery vehicle created or updated.
    case deliveryVehicle(project: String, id: ContextID, created: Bool = false)
    /// An entity deleted by a call that succeeded.
    case deleted(project: String, kind: Kind, id: ContextID)
    /// A log entry of another kind, or of a call that failed: nothing to do.
    case unrelated(type: String)

    /// The kinds of entity an entry can be about, by their collection's name in resource names.
    enum Kind: String, Sendable {
        case trip = "trips"
        case vehicle = "vehicles"
        case task = "tasks"
        case deliveryVehicle = "deliveryVehicles"

        /// The request field the logging reference names the entity's ID by.
        var requestIDField: String {
            switch self {
            case .trip: "tripId"
            case .vehicle: "vehicleId"
            case .task: "taskId"
            case .deliveryVehicle: "deliveryVehicleId"
            }
        }
    }

    /// A log entry that cannot be read: not JSON, no `jsonPayload`, or an entity without a usable name.
    struct Malformed: Error, CustomStringConvertible {
        let description: String
    }

    private static let onDemand = "type.googleapis.com/maps.fleetengine.v1."
    private static let delivery = "type.googleapis.com/maps.fleetengine.delivery.log.v1."

    /// The entries of calls that leave an entity in a state the `response` shows: the kind, and whether it was
    /// created.
    static let stateLogs: [String: (kind: Kind, created: Bool)] = [
        onDemand + "CreateTripLog": (.trip, true), onDemand + "UpdateTripLog": (.trip, false),
        onDemand + "CreateVehicleLog": (.vehicle, true), onDemand + "UpdateVehicleLog": (.vehicle, false),
        delivery + "CreateTaskLog": (.task, true), delivery + "UpdateTaskLog": (.task, false),
        delivery + "CreateDeliveryVehicleLog": (.deliveryVehicle, true), delivery + "UpdateDeliveryVehicleLog": (.deliveryVehicle, false),
    ]

    /// The entries of deletions (Fleet Engine's delete methods, 2025).
    static let deleteLogs: [String: Kind] = [
        onDemand + "DeleteTripLog": .trip, onDemand + "DeleteVehicleLog": .vehicle,
        delivery + "DeleteTaskLog": .task, delivery + "DeleteDeliveryVehicleLog": .deliveryVehicle,
    ]

    /// Reads the LogEntry JSON in `bytes`.
    init(_ bytes: [UInt8]) throws(Malformed) {
        self = try Self.read(bytes).entry
    }

    /// Reads the LogEntry JSON in `bytes`, with its own `timestamp` (when the call was logged, not when the entry was
    /// delivered) in epoch milliseconds, or nil when it has none that reads.
    static func read(_ bytes: [UInt8]) throws(Malformed) -> (entry: FleetEngineLogEntry, loggedAt: Int64?) {
        guard case .object(let entry)? = try? JSON.parse(bytes) else { throw Malformed(description: "the message data is not a JSON object") }
        return (try FleetEngineLogEntry(entry: entry), entry["timestamp"]?.stringValue.flatMap(RFC3339.milliseconds))
    }

    private init(entry: JSONObject) throws(Malformed) {
        guard case .object(let payload)? = entry["jsonPayload"] else { throw Malformed(description: "the log entry has no jsonPayload") }
        guard case .string(let type)? = payload["@type"] else { throw Malformed(description: "the jsonPayload has no @type") }
        if let kind = Self.deleteLogs[type] {
            // A failed call logs its errorResponse: nothing was deleted.
            guard payload["errorResponse"] == nil, case .object(let request)? = payload["request"] else {
                self = .unrelated(type: type)
                return
            }
            let (project, id) = try Self.deleted(kind, request: request, logName: entry["logName"]?.stringValue, type: type)
            self = .deleted(project: project, kind: kind, id: id)
            return
        }
        guard let log = Self.stateLogs[type], case .object(let response)? = payload["response"] else {
            self = .unrelated(type: type)
            return
        }
        let (kind, created) = (log.kind, log.created)
        guard case .string(let name)? = response["name"] else { throw Malformed(description: "the \(type) response has no name") }
        let (project, id) = try Self.parse(name: name, kind: kind, type: type)
        switch kind {
        case .trip:
            self = .trip(project: project, id: id, status: response["status"]?.stringValue ?? "", created: created)
        case .vehicle:
            self = .vehicle(project: project, id: id, state: response["state"]?.stringValue ?? "", created: created)
        case .task:
            self = .task(
                project: project, id: id, state: response["state"]?.stringValue, outcome: response["taskOutcome"]?.stringValue,
                type: response["type"]?.stringValue, trackingID: response["trackingId"]?.stringValue.flatMap(ContextID.init),
                created: created)
        case .deliveryVehicle:
            self = .deliveryVehicle(project: project, id: id, created: created)
        }
    }

    /// The project and ID of a deleted entity: the request's `name`, or its ID field and the project of `logName`
    /// (`projects/{project}/logs/…`), where Fleet Engine writes the provider's entries.
    private static func deleted(
        _ kind: Kind, request: JSONObject, logName: String?, type: String
    ) throws(Malformed) -> (project: String, id: ContextID) {
        if let name = request["name"]?.stringValue { return try parse(name: name, kind: kind, type: type) }
        guard let raw = request[kind.requestIDField]?.stringValue else {
            throw Malformed(description: "the \(type) request names no \(kind.requestIDField)")
        }
        let parts = logName?.split(separator: "/", maxSplits: 2, omittingEmptySubsequences: false) ?? []
        guard parts.count == 3, parts[0] == "projects", !parts[1].isEmpty else {
            throw Malformed(description: "the \(type) entry has no logName of a project")
        }
        guard let id = ContextID(raw) else {
            throw Malformed(description: "the \(type) request's \(kind.requestIDField) \(Sanitized.quote(raw)) is not a Fleet Engine ID")
        }
        return (String(parts[1]), id)
    }

    /// `providers/{project}/{kind}/{id}` read, the ID checked against Fleet Engine's rule.
    private static func parse(name: String, kind: Kind, type: String) throws(Malformed) -> (project: String, id: ContextID) {
        let parts = name.split(separator: "/", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "providers", parts[2] == kind.rawValue, let id = ContextID(String(parts[3])) else {
            throw Malformed(description: "the \(type) entry names \(Sanitized.quote(name)), not providers/{project}/\(kind.rawValue)/{id}")
        }
        return (String(parts[1]), id)
    }
}
