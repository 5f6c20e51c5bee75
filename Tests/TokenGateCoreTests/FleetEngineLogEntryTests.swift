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
        keysURL: JWKSURL(checked: FleetEventSettings.googleKeysURL))

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
        ending.vehicleEnds = [.offline]
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

    // MARK: Deletions, creations, delivery vehicles

    static let onDemand = "type.googleapis.com/maps.fleetengine.v1."
    static let delivery = "type.googleapis.com/maps.fleetengine.delivery.log.v1."

    /// A deletion's entry as Fleet Engine logs it: the call returns nothing, so there is a `request` and no
    /// `response`; a failed call has an `errorResponse` (and severity ERROR).
    static func deletion(_ type: String, request: JSONObject, failed: Bool = false, logName: String = "delete_trip") -> [UInt8] {
        var payload: JSONObject = ["@type": .string(type), "request": .object(request)]
        var entry: JSONObject = [
            "insertId": "4d5e6f", "timestamp": "2026-11-27T07:00:00.123456789Z",
            "logName": .string("projects/acme-rides/logs/fleetengine.googleapis.com%2F\(logName)"),
            "resource": .object(["type": "fleetengine.googleapis.com/Fleet", "labels": .object(["resource_container": "projects/acme-rides"])]),
        ]
        if failed {
            payload["errorResponse"] = .object(["httpStatusCode": 404, "code": "NOT_FOUND", "message": "No entity with id p1 space exists"])
            entry["severity"] = "ERROR"
        }
        entry["jsonPayload"] = .object(payload)
        return JSON.serialize(.object(entry))
    }

    static func changes(_ bytes: [UInt8], _ settings: FleetEventSettings = defaults) throws -> (ends: [String], lifts: [String]) {
        let changes = FleetEventReceiver.changes(try FleetEngineLogEntry(bytes), settings: settings)
        return (changes.ends.map { "\($0.0.rawValue)/\($0.1)" }, changes.lifts.map { "\($0.0.rawValue)/\($0.1)" })
    }

    @Test(arguments: [
        (onDemand + "DeleteTripLog", "tripId", "trips", "consumer", "delete_trip"),
        (onDemand + "DeleteVehicleLog", "vehicleId", "vehicles", "driver", "delete_vehicle"),
        (delivery + "DeleteTaskLog", "taskId", "tasks", "delivery-consumer", "delete_task"),
        (delivery + "DeleteDeliveryVehicleLog", "deliveryVehicleId", "deliveryVehicles", "delivery-driver", "delete_delivery_vehicle"),
    ])
    func aDeletionEndsItsEntityByDefault(type: String, field: String, collection: String, tokenType: String, logName: String) throws {
        // The logging reference's request spells the entity's ID; the API's own request carries its name.
        let byID = Self.deletion(type, request: ["header": .object([:]), field: "p1 space"], logName: logName)
        let byName = Self.deletion(type, request: ["name": .string("providers/acme-rides/\(collection)/p1 space")], logName: logName)
        for bytes in [byID, byName] {
            let (entry, loggedAt) = try FleetEngineLogEntry.read(bytes)
            #expect(entry == .deleted(project: "acme-rides", kind: FleetEngineLogEntry.Kind(rawValue: collection)!, id: ContextID("p1 space")!))
            #expect(loggedAt == 1_795_762_800_123)
            #expect(try Self.changes(bytes).ends == ["\(tokenType)/p1 space"])
        }
        // A deletion that failed deleted nothing.
        let failed = Self.deletion(type, request: [field: "p1 space"], failed: true, logName: logName)
        #expect(try FleetEngineLogEntry(failed) == .unrelated(type: type))
        #expect(try Self.changes(failed).ends.isEmpty)
        // A list without `deleted` ends nothing on one.
        var without = Self.defaults
        (without.tripStatuses, without.taskEnds, without.vehicleEnds, without.deliveryVehicleEnds) = ([.complete], [.closed], [.offline], [])
        #expect(try Self.changes(byID, without).ends.isEmpty)
    }

    @Test func aDeletionThatNamesNoEntityIsMalformed() throws {
        let type = Self.onDemand + "DeleteTripLog"
        for broken in [
            Self.deletion(type, request: ["header": .object([:])]),
            Self.deletion(type, request: ["tripId": "a/b"]),
            Self.deletion(type, request: ["tripId": "e\u{301}"]),
            Self.deletion(type, request: ["name": "providers/acme-rides/vehicles/p1"]),
        ] {
            #expect(throws: FleetEngineLogEntry.Malformed.self) { try FleetEngineLogEntry(broken) }
        }
        // The project comes from the entry's logName when the request gives only the ID.
        var entry = try #require(try JSON.parse(Self.deletion(type, request: ["tripId": "p1"])).objectValue)
        entry["logName"] = "organizations/1/logs/fleetengine.googleapis.com%2Fdelete_trip"
        #expect(throws: FleetEngineLogEntry.Malformed.self) { try FleetEngineLogEntry(JSON.serialize(.object(entry))) }
    }

    /// An entity created with an ID an older event ended (after a deletion: a test reusing its IDs) lifts that end,
    /// unless the same entry ends it. A delivery vehicle has no state that ends it: its updates change nothing.
    @Test func aCreationLiftsAndADeliveryVehicleUpdateChangesNothing() throws {
        let trip = Self.entry(
            Self.onDemand + "CreateTripLog", response: ["name": "providers/acme-rides/trips/caf\u{E9}", "status": "TRIP_STATUS_NEW"])
        #expect(try FleetEngineLogEntry(trip) == .trip(project: "acme-rides", id: ContextID("caf\u{E9}")!, status: "TRIP_STATUS_NEW", created: true))
        #expect(try Self.changes(trip).lifts == ["consumer/caf\u{E9}"])
        let task = Self.entry(Self.delivery + "CreateTaskLog", response: ["name": "providers/acme-rides/tasks/t1", "state": "TASK_STATE_LOG_OPEN"])
        #expect(try Self.changes(task).lifts == ["delivery-consumer/t1"])
        let van = Self.entry(Self.delivery + "CreateDeliveryVehicleLog", response: ["name": "providers/acme-rides/deliveryVehicles/van 3"])
        #expect(try Self.changes(van) == ([], ["delivery-driver/van 3"]))
        let moving = Self.entry(
            Self.delivery + "UpdateDeliveryVehicleLog",
            response: ["name": "providers/acme-rides/deliveryVehicles/van 3", "navigationStatus": "NAVIGATION_STATUS_ENROUTE_TO_DESTINATION"])
        #expect(try FleetEngineLogEntry(moving) == .deliveryVehicle(project: "acme-rides", id: ContextID("van 3")!))
        #expect(try Self.changes(moving) == ([], []))
        // A vehicle created offline is ended when going offline ends vehicles, not lifted.
        let offline = Self.entry(
            Self.onDemand + "CreateVehicleLog", response: ["name": "providers/acme-rides/vehicles/v-7", "state": "VEHICLE_STATE_OFFLINE"])
        #expect(try Self.changes(offline) == ([], ["driver/v-7"]))
        var ending = Self.defaults
        ending.vehicleEnds = [.offline, .deleted]
        #expect(try Self.changes(offline, ending) == (["driver/v-7"], []))
        // Created with a status that ends it at once: ended, not lifted.
        let done = Self.entry(Self.onDemand + "CreateTripLog", response: ["name": "providers/acme-rides/trips/t9", "status": "TRIP_STATUS_COMPLETE"])
        #expect(try Self.changes(done) == (["consumer/t9"], []))
    }
}
