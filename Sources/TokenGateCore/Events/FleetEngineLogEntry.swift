import JOSE

/// What one Fleet Engine Cloud Logging entry says about an entity's state, read from its `jsonPayload` as Fleet
/// Engine logs it (`type.googleapis.com/maps.fleetengine.v1.UpdateTripLog` and the delivery equivalents): the
/// `@type`, and the `response` — the entity as it is after the call, named `providers/{project}/{kind}/{id}`.
/// Only the fields that can end a context are read; any other entry is `unrelated`.
enum FleetEngineLogEntry: Equatable {
    /// A trip, with its status (`TRIP_STATUS_COMPLETE`, …).
    case trip(project: String, id: ContextID, status: String)
    /// An on-demand vehicle, with its state (`VEHICLE_STATE_OFFLINE`, …).
    case vehicle(project: String, id: ContextID, state: String)
    /// A delivery task, with its state, outcome, type and the shipment's tracking ID.
    case task(project: String, id: ContextID, state: String?, outcome: String?, type: String?, trackingID: ContextID?)
    /// A log entry of another kind, or of a call that failed (no `response`): nothing to do.
    case unrelated(type: String)

    /// A log entry that cannot be read: not JSON, no `jsonPayload`, or a `response` without a usable name.
    struct Malformed: Error, CustomStringConvertible {
        let description: String
    }

    static let tripLogs: Set<String> = [
        "type.googleapis.com/maps.fleetengine.v1.CreateTripLog", "type.googleapis.com/maps.fleetengine.v1.UpdateTripLog",
    ]
    static let vehicleLogs: Set<String> = [
        "type.googleapis.com/maps.fleetengine.v1.CreateVehicleLog", "type.googleapis.com/maps.fleetengine.v1.UpdateVehicleLog",
    ]
    static let taskLogs: Set<String> = [
        "type.googleapis.com/maps.fleetengine.delivery.log.v1.CreateTaskLog",
        "type.googleapis.com/maps.fleetengine.delivery.log.v1.UpdateTaskLog",
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
        let handled = Self.tripLogs.contains(type) || Self.vehicleLogs.contains(type) || Self.taskLogs.contains(type)
        guard handled, case .object(let response)? = payload["response"] else {
            self = .unrelated(type: type)
            return
        }
        guard case .string(let name)? = response["name"] else { throw Malformed(description: "the \(type) response has no name") }
        let parts = name.split(separator: "/", omittingEmptySubsequences: false)
        let kind = Self.tripLogs.contains(type) ? "trips" : Self.vehicleLogs.contains(type) ? "vehicles" : "tasks"
        guard parts.count == 4, parts[0] == "providers", parts[2] == kind, let id = ContextID(String(parts[3])) else {
            throw Malformed(description: "the \(type) response names '\(name.prefix(200))', not providers/{project}/\(kind)/{id}")
        }
        let project = String(parts[1])
        switch kind {
        case "trips":
            self = .trip(project: project, id: id, status: response["status"]?.stringValue ?? "")
        case "vehicles":
            self = .vehicle(project: project, id: id, state: response["state"]?.stringValue ?? "")
        default:
            self = .task(
                project: project, id: id, state: response["state"]?.stringValue, outcome: response["taskOutcome"]?.stringValue,
                type: response["type"]?.stringValue, trackingID: response["trackingId"]?.stringValue.flatMap(ContextID.init))
        }
    }
}
