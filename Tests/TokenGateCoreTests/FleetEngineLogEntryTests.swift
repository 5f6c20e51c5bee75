import JOSE
import Testing

@testable import TokenGateCore

/// Fleet Engine's log entries as its Cloud Logging sink writes them (the shapes of `UpdateTripLog`, `UpdateTaskLog`
/// and `UpdateVehicleLog` in Fleet Engine's logging reference), and what each ends under the default `endOn`.
@Suite struct FleetEngineLogEntryTests {
    /// A log entry of `type` whose `response` is `response` (the entity after the call).
    static func entry(_ type: String, response: JSONObject?, request: JSONObject = [:]) -> [UInt8] {
        var payload: JSONObject = ["@type": .string(type), "request": .object(request)]
        if let response { payload["response"] = .object(response) }
        let entry: JSONObject = [
            "insertId": "1a2b3c", "jsonPayload": .object(payload),
            "logName": "projects/acme-rides/logs/fleetengine.googleapis.com%2Fupdate_trip",
            "resource": .object(["type": "fleetengine.googleapis.com/Fleet", "labels": .object(["resource_container": "projects/acme-rides"])]),
        ]
        return JSON.serialize(.object(entry))
    }

    static let updateTrip = "type.googleapis.com/maps.fleetengine.v1.UpdateTripLog"
    static let updateTask = "type.googleapis.com/maps.fleetengine.delivery.log.v1.UpdateTaskLog"
    static let updateVehicle = "type.googleapis.com/maps.fleetengine.v1.UpdateVehicleLog"
    static let defaults = FleetEventSettings(
        audience: "https://tokengate.test/events", serviceAccount: "push@acme-rides.iam.gserviceaccount.com",
        keysURL: JWKSURL(checked: FleetEventSettings.googleKeysURL), tripStatuses: Set(FleetEventSettings.TripEnd.allCases),
        taskEnds: Set(FleetEventSettings.TaskEnd.allCases), endsOfflineVehicles: false)

    static func ends(_ bytes: [UInt8], _ settings: FleetEventSettings = defaults) throws -> [String] {
        FleetEventReceiver.changes(try FleetEngineLogEntry(bytes), settings: settings).ends.map { "\($0.0.rawValue)/\($0.1)" }
    }

    @Test(arguments: [
        ("TRIP_STATUS_COMPLETE", true), ("TRIP_STATUS_CANCELED", true), ("TRIP_STATUS_NEW", false),
        ("TRIP_STATUS_ENROUTE_TO_DROPOFF", false), ("TRIP_STATUS_ARRIVED_AT_PICKUP", false),
    ])
    func aTripEndsWhenItIsCompleteOrCanceled(status: String, ends: Bool) throws {
        let bytes = Self.entry(
            Self.updateTrip, response: ["name": "providers/acme-rides/trips/trip-42", "status": .string(status), "vehicleId": "v-7"],
            request: ["tripId": "trip-42", "updateMask": "status"])
        #expect(try FleetEngineLogEntry(bytes) == .trip(project: "acme-rides", id: ContextID("trip-42")!, status: status))
        #expect(try Self.ends(bytes) == (ends ? ["consumer/trip-42"] : []))
        var onlyCompleted = Self.defaults
        onlyCompleted.tripStatuses = [.complete]
        #expect(try Self.ends(bytes, onlyCompleted) == (status == "TRIP_STATUS_COMPLETE" ? ["consumer/trip-42"] : []))
    }

    @Test func aClosedDeliveryTaskEndsTheTaskAndItsShipmentAPickupOnlyItself() throws {
        func task(_ type: String, state: String, outcome: String?) -> [UInt8] {
            var response: JSONObject = [
                "name": "providers/acme-rides/tasks/task-1", "state": .string(state), "type": .string(type),
                "trackingId": "parcel-9", "deliveryVehicleId": "van-3",
            ]
            if let outcome { response["taskOutcome"] = .string(outcome) }
            return Self.entry(Self.updateTask, response: response, request: ["taskId": "task-1", "updateMask": "taskOutcome"])
        }
        #expect(
            try Self.ends(task("TASK_TYPE_LOG_DELIVERY", state: "TASK_STATE_LOG_OPEN", outcome: "TASK_OUTCOME_LOG_SUCCEEDED"))
                == ["delivery-consumer/task-1", "delivery-consumer/parcel-9"])
        #expect(
            try Self.ends(task("TASK_TYPE_LOG_DELIVERY", state: "TASK_STATE_LOG_CLOSED", outcome: "TASK_OUTCOME_LOG_FAILED"))
                == ["delivery-consumer/task-1", "delivery-consumer/parcel-9"])
        // The pickup of a shipment closes; its tracking ID goes on to the delivery.
        #expect(
            try Self.ends(task("TASK_TYPE_LOG_PICKUP", state: "TASK_STATE_LOG_CLOSED", outcome: "TASK_OUTCOME_LOG_SUCCEEDED"))
                == ["delivery-consumer/task-1"])
        #expect(try Self.ends(task("TASK_TYPE_LOG_DELIVERY", state: "TASK_STATE_LOG_OPEN", outcome: nil)).isEmpty)
        var onlyFailures = Self.defaults
        onlyFailures.taskEnds = [.failed]
        let delivered = task("TASK_TYPE_LOG_DELIVERY", state: "TASK_STATE_LOG_CLOSED", outcome: "TASK_OUTCOME_LOG_SUCCEEDED")
        #expect(try Self.ends(delivered, onlyFailures).isEmpty)
    }

    @Test func aVehicleGoingOfflineEndsItOnlyWhenConfiguredAndOnlineLiftsIt() throws {
        let offline = Self.entry(Self.updateVehicle, response: ["name": "providers/acme-rides/vehicles/v-7", "state": "VEHICLE_STATE_OFFLINE"])
        let online = Self.entry(Self.updateVehicle, response: ["name": "providers/acme-rides/vehicles/v-7", "state": "VEHICLE_STATE_ONLINE"])
        #expect(try Self.ends(offline).isEmpty)
        var ending = Self.defaults
        ending.endsOfflineVehicles = true
        #expect(try Self.ends(offline, ending) == ["driver/v-7"])
        let lifts = FleetEventReceiver.changes(try FleetEngineLogEntry(online), settings: ending).lifts
        #expect(lifts.map { "\($0.0.rawValue)/\($0.1)" } == ["driver/v-7"])
    }

    @Test func otherEntriesAreUnrelatedAndBrokenOnesMalformed() throws {
        #expect(
            try FleetEngineLogEntry(Self.entry("type.googleapis.com/maps.fleetengine.v1.SearchVehiclesLog", response: [:]))
                == .unrelated(type: "type.googleapis.com/maps.fleetengine.v1.SearchVehiclesLog"))
        // A failed call logs an errorResponse and no response: nothing changed.
        #expect(try FleetEngineLogEntry(Self.entry(Self.updateTrip, response: nil)) == .unrelated(type: Self.updateTrip))
        for broken in [
            Array("not json".utf8), Array(#"{"textPayload":"x"}"#.utf8),
            Self.entry(Self.updateTrip, response: ["status": "TRIP_STATUS_COMPLETE"]),
            Self.entry(Self.updateTrip, response: ["name": "providers/acme-rides/vehicles/trip-42", "status": "TRIP_STATUS_COMPLETE"]),
            // Not in Normalization Form C: Fleet Engine never names a trip so.
            Self.entry(Self.updateTrip, response: ["name": "providers/acme-rides/trips/e\u{301}", "status": "TRIP_STATUS_COMPLETE"]),
        ] {
            #expect(throws: FleetEngineLogEntry.Malformed.self) { try FleetEngineLogEntry(broken) }
        }
    }
}
