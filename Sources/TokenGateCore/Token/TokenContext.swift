public import JOSE

/// What one token is for: the trip, vehicle, task or shipment it is scoped to, or a whole fleet.
public enum TokenContext: Sendable, Hashable, CustomStringConvertible {
    /// A trip, for `consumer` tokens.
    case trip(ContextID)
    /// An on-demand vehicle, for `driver` tokens.
    case vehicle(ContextID)
    /// A delivery vehicle, for `delivery-driver` tokens.
    case deliveryVehicle(ContextID)
    /// A delivery vehicle and its task (or every task), for `trusted-delivery-driver` tokens.
    case trustedDeliveryVehicle(ContextID, task: TaskScope)
    /// A shipment tracking ID, for `delivery-consumer` tokens.
    case tracking(ContextID)
    /// A task ID, for `delivery-consumer` tokens.
    case task(ContextID)
    /// Several tasks, for `batch-tasks` tokens.
    case tasks(TaskIDList)
    /// Every on-demand and delivery entity, read only, for `fleet-reader` tokens.
    case fleetReader
    /// Every delivery entity, read only, for `delivery-fleet-reader` tokens.
    case deliveryFleetReader
    /// The whole on-demand fleet, for `server` tokens only.
    case fleet

    /// The `taskid` of a trusted delivery driver's token.
    public enum TaskScope: Sendable, Hashable, CustomStringConvertible {
        /// One task.
        case one(ContextID)
        /// Every task (`*`): only for a client marked `allowAllTasks`.
        case all

        /// The claim and parameter value.
        public var rawValue: String {
            switch self {
            case .one(let id): id.rawValue
            case .all: "*"
            }
        }

        /// For log lines: the task's ``ContextID/description``, or `*`.
        public var description: String {
            switch self {
            case .one(let id): id.description
            case .all: "*"
            }
        }
    }

    /// The token type this context belongs to.
    public var tokenType: TokenType {
        switch self {
        case .trip: .consumer
        case .vehicle: .driver
        case .deliveryVehicle: .deliveryDriver
        case .trustedDeliveryVehicle: .trustedDeliveryDriver
        case .tracking, .task: .deliveryConsumer
        case .tasks: .batchTasks
        case .fleetReader: .fleetReader
        case .deliveryFleetReader: .deliveryFleetReader
        case .fleet: .server
        }
    }

    /// The one entity the context is about (a trusted driver's vehicle), or `nil` for batches and whole fleets.
    public var id: ContextID? {
        switch self {
        case .trip(let id), .vehicle(let id), .deliveryVehicle(let id), .trustedDeliveryVehicle(let id, _), .tracking(let id),
            .task(let id):
            id
        case .tasks, .fleetReader, .deliveryFleetReader, .fleet: nil
        }
    }

    /// The request parameter that names ``id`` (`tripId`, `vehicleId`, …).
    public var parameterName: String? {
        switch self {
        case .trip: "tripId"
        case .vehicle: "vehicleId"
        case .deliveryVehicle, .trustedDeliveryVehicle: "deliveryVehicleId"
        case .tracking: "trackingId"
        case .task: "taskId"
        case .tasks, .fleetReader, .deliveryFleetReader, .fleet: nil
        }
    }

    /// Every ID a caller must be allowed to have this context: the entity's, or each task of a batch. A trusted
    /// driver is authorized by the vehicle it drives; its task is part of the token's scope, not of the grant.
    public var grantedIDs: [ContextID] {
        switch self {
        case .tasks(let list): list.ids
        default: id.map { [$0] } ?? []
        }
    }

    /// Whether the token's claim legitimately holds a `*`: whole-fleet types and a trusted driver's every task.
    public var hasWildcard: Bool {
        switch self {
        case .trustedDeliveryVehicle(_, .all), .fleetReader, .deliveryFleetReader, .fleet: true
        default: false
        }
    }

    /// The request parameters that name this context, in a fixed order, as the API spells them (`taskIds` is a
    /// comma-separated list); empty for the whole-fleet types.
    public var parameters: [(name: String, value: String)] {
        switch self {
        case .trustedDeliveryVehicle(let vehicle, let task): [("deliveryVehicleId", vehicle.rawValue), ("taskId", task.rawValue)]
        case .tasks(let list): [("taskIds", list.ids.map(\.rawValue).joined(separator: ","))]
        default:
            if let parameterName, let id { [(parameterName, id.rawValue)] } else { [] }
        }
    }

    /// The context as a JSON object for response bodies, audit lines and upstream requests (`taskIds` an array).
    public var jsonObject: JSONObject {
        var object = JSONObject()
        switch self {
        case .tasks(let list): object["taskIds"] = .array(list.ids.map { .string($0.rawValue) })
        default: for (name, value) in parameters { object[name] = .string(value) }
        }
        return object
    }

    /// The exact `authorization` claim Fleet Engine expects for this context (keys are lower case).
    public var authorizationClaim: JSONObject {
        switch self {
        case .trip(let id): JSONObject(["tripid": .string(id.rawValue)])
        case .vehicle(let id): JSONObject(["vehicleid": .string(id.rawValue)])
        case .deliveryVehicle(let id): JSONObject(["deliveryvehicleid": .string(id.rawValue)])
        case .trustedDeliveryVehicle(let id, let task):
            JSONObject(["deliveryvehicleid": .string(id.rawValue), "taskid": .string(task.rawValue)])
        case .tracking(let id): JSONObject(["trackingid": .string(id.rawValue)])
        case .task(let id): JSONObject(["taskid": .string(id.rawValue)])
        case .tasks(let list): JSONObject(["taskids": .array(list.ids.map { .string($0.rawValue) })])
        case .fleetReader:
            JSONObject([
                "tripid": .string("*"), "vehicleid": .string("*"), "taskid": .string("*"), "trackingid": .string("*"),
                "deliveryvehicleid": .string("*"),
            ])
        case .deliveryFleetReader:
            JSONObject(["taskid": .string("*"), "trackingid": .string("*"), "deliveryvehicleid": .string("*")])
        case .fleet: JSONObject(["tripid": .string("*"), "vehicleid": .string("*")])
        }
    }

    /// The context for log lines and messages: `tripId=trip-42`, each ID as its ``ContextID/description`` writes it
    /// (escaped), `fleet` or `whole fleet` for the whole-fleet types.
    public var description: String {
        switch self {
        case .trustedDeliveryVehicle(let vehicle, let task): "deliveryVehicleId=\(vehicle),taskId=\(task)"
        case .tasks(let list): "taskIds=" + list.ids.map(\.description).joined(separator: ",")
        default:
            if let parameterName, let id { "\(parameterName)=\(id)" } else { tokenType == .server ? "fleet" : "whole fleet" }
        }
    }

    /// The context as its parameters name it, IDs as sent (`tripId=p1 space`): what a digest of the context is taken
    /// over, so replicas agree on it. Two contexts of one type never share one (`,` is never in an ID). Never logged:
    /// ``description`` is for that.
    package var identity: String {
        let parameters = self.parameters
        guard !parameters.isEmpty else { return tokenType == .server ? "fleet" : "whole fleet" }
        return parameters.map { "\($0.name)=\($0.value)" }.joined(separator: ",")
    }

    /// Builds the context for `type` from the request parameters an app or operator gave, or explains what is
    /// wrong. `parameters` maps `tripId`, `vehicleId`, `deliveryVehicleId`, `trackingId`, `taskId`, `taskIds` to
    /// raw values.
    public static func parse(type: TokenType, parameters: [String: String]) throws(ContextError) -> TokenContext {
        func id(_ field: ContextID.Field) throws(ContextError) -> ContextID? {
            guard let raw = parameters[field.rawValue] else { return nil }
            do {
                return try ContextID(validating: raw)
            } catch {
                throw .invalidID(ContextID.Refusal(field, error))
            }
        }
        // Counted rather than collected: the sorted list of names is only needed to explain a refusal.
        let givenCount = parameters.keys.reduce(0) { $0 + (Self.allParameterNames.contains($1) ? 1 : 0) }
        func only(_ names: String...) -> Bool { givenCount == names.count && names.allSatisfy { parameters[$0] != nil } }
        var given: [String] { parameters.keys.filter(Self.allParameterNames.contains).sorted() }
        switch type {
        case .consumer:
            guard only("tripId"), let trip = try id(.tripId) else { throw .wrongParameters(type, given) }
            return .trip(trip)
        case .driver:
            guard only("vehicleId"), let vehicle = try id(.vehicleId) else { throw .wrongParameters(type, given) }
            return .vehicle(vehicle)
        case .deliveryDriver:
            guard only("deliveryVehicleId"), let vehicle = try id(.deliveryVehicleId) else {
                throw .wrongParameters(type, given)
            }
            return .deliveryVehicle(vehicle)
        case .trustedDeliveryDriver:
            guard only("deliveryVehicleId", "taskId"), let vehicle = try id(.deliveryVehicleId) else {
                throw .wrongParameters(type, given)
            }
            if parameters["taskId"] == "*" { return .trustedDeliveryVehicle(vehicle, task: .all) }
            guard let task = try id(.taskId) else { throw .wrongParameters(type, given) }
            return .trustedDeliveryVehicle(vehicle, task: .one(task))
        case .deliveryConsumer:
            if only("trackingId"), let tracking = try id(.trackingId) { return .tracking(tracking) }
            if only("taskId"), let task = try id(.taskId) { return .task(task) }
            throw .wrongParameters(type, given)
        case .batchTasks:
            guard only("taskIds"), let raw = parameters["taskIds"] else { throw .wrongParameters(type, given) }
            return .tasks(try TaskIDList(commaSeparated: raw))
        case .fleetReader, .deliveryFleetReader, .server:
            guard givenCount == 0 else { throw .wrongParameters(type, given) }
            return type == .fleetReader ? .fleetReader : type == .deliveryFleetReader ? .deliveryFleetReader : .fleet
        }
    }

    /// Every parameter name that names a context.
    public static let allParameterNames: Set<String> = ["tripId", "vehicleId", "deliveryVehicleId", "trackingId", "taskId", "taskIds"]
}

/// The tasks of a `batch-tasks` token: 1 to ``maxCount`` distinct task IDs, in the order the caller gave them.
public struct TaskIDList: Sendable, Hashable {
    /// The most tasks one token may name. 25 ASCII IDs of 64 characters still fit a 2 KiB request URL; IDs in other
    /// scripts, percent-encoded, take up to twelve bytes of URL a character, and fewer of them fit.
    public static let maxCount = 25

    /// The task IDs.
    public let ids: [ContextID]

    /// The list, or why it is not one: empty, too long, a bad ID, or an ID twice.
    public init(_ ids: [ContextID]) throws(ContextError) {
        guard (1...Self.maxCount).contains(ids.count) else { throw .invalidTaskList("name 1 to \(Self.maxCount) task IDs") }
        guard Set(ids).count == ids.count else { throw .invalidTaskList("a task ID is listed twice") }
        self.ids = ids
    }

    /// Parses `t1,t2,…`.
    public init(commaSeparated raw: String) throws(ContextError) {
        var ids: [ContextID] = []
        for part in raw.split(separator: ",", omittingEmptySubsequences: false) {
            guard ids.count < Self.maxCount else { throw .invalidTaskList("name 1 to \(Self.maxCount) task IDs") }
            do {
                ids.append(try ContextID(validating: String(part)))
            } catch {
                throw .invalidID(ContextID.Refusal(.taskIds, error))
            }
        }
        try self.init(ids)
    }
}

/// Why request parameters do not name a valid context.
public enum ContextError: Error, Sendable, Equatable, CustomStringConvertible {
    /// An ID breaks Fleet Engine's rule (or is `*`): which parameter, and which rule.
    case invalidID(ContextID.Refusal)
    /// The parameters given do not fit the token type.
    case wrongParameters(TokenType, [String])
    /// `taskIds` is empty, too long or repeats an ID.
    case invalidTaskList(String)

    public var description: String {
        switch self {
        case .invalidID(let refusal):
            refusal.description
        case .wrongParameters(let type, let given):
            "a \(type) token needs \(Self.expectation(for: type)); got \(given.isEmpty ? "none" : given.joined(separator: ", "))"
        case .invalidTaskList(let problem):
            "taskIds: \(problem)"
        }
    }

    private static func expectation(for type: TokenType) -> String {
        switch type {
        case .consumer: "tripId"
        case .driver: "vehicleId"
        case .deliveryDriver: "deliveryVehicleId"
        case .trustedDeliveryDriver: "deliveryVehicleId and taskId (a task ID, or '*' for every task)"
        case .deliveryConsumer: "trackingId or taskId (exactly one)"
        case .batchTasks: "taskIds (comma-separated task IDs)"
        case .fleetReader, .deliveryFleetReader, .server: "no context parameter"
        }
    }
}
