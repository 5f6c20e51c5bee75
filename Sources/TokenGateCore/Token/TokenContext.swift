public import JOSE

/// What one token is for: the trip, vehicle, task or shipment it is scoped to.
public enum TokenContext: Sendable, Hashable, CustomStringConvertible {
    /// A trip, for `consumer` tokens.
    case trip(ContextID)
    /// An on-demand vehicle, for `driver` tokens.
    case vehicle(ContextID)
    /// A delivery vehicle, for `delivery-driver` tokens.
    case deliveryVehicle(ContextID)
    /// A shipment tracking ID, for `delivery-consumer` tokens.
    case tracking(ContextID)
    /// A task ID, for `delivery-consumer` tokens.
    case task(ContextID)
    /// The whole fleet, for `server` tokens only.
    case fleet

    /// The token type this context belongs to.
    public var tokenType: TokenType {
        switch self {
        case .trip: .consumer
        case .vehicle: .driver
        case .deliveryVehicle: .deliveryDriver
        case .tracking, .task: .deliveryConsumer
        case .fleet: .server
        }
    }

    /// The ID, or `nil` for the fleet.
    public var id: ContextID? {
        switch self {
        case .trip(let id), .vehicle(let id), .deliveryVehicle(let id), .tracking(let id), .task(let id): id
        case .fleet: nil
        }
    }

    /// The request parameter that names this context (`tripId`, `vehicleId`, …), as in URLs and responses.
    public var parameterName: String? {
        switch self {
        case .trip: "tripId"
        case .vehicle: "vehicleId"
        case .deliveryVehicle: "deliveryVehicleId"
        case .tracking: "trackingId"
        case .task: "taskId"
        case .fleet: nil
        }
    }

    /// The exact `authorization` claim Fleet Engine expects for this context (keys are lower case).
    public var authorizationClaim: JSONObject {
        switch self {
        case .trip(let id): JSONObject(["tripid": .string(id.rawValue)])
        case .vehicle(let id): JSONObject(["vehicleid": .string(id.rawValue)])
        case .deliveryVehicle(let id): JSONObject(["deliveryvehicleid": .string(id.rawValue)])
        case .tracking(let id): JSONObject(["trackingid": .string(id.rawValue)])
        case .task(let id): JSONObject(["taskid": .string(id.rawValue)])
        case .fleet: JSONObject(["tripid": .string("*"), "vehicleid": .string("*")])
        }
    }

    public var description: String {
        guard let id, let parameterName else { return "fleet" }
        return "\(parameterName)=\(id)"
    }

    /// Builds the context for `type` from the request parameters an app or operator gave, or explains what is
    /// wrong. `parameters` maps `tripId`, `vehicleId`, `deliveryVehicleId`, `trackingId`, `taskId` to raw values.
    public static func parse(type: TokenType, parameters: [String: String]) throws(ContextError) -> TokenContext {
        func id(_ name: String) throws(ContextError) -> ContextID? {
            guard let raw = parameters[name] else { return nil }
            guard let id = ContextID(raw) else { throw .invalidID(parameter: name) }
            return id
        }
        // Counted rather than collected: the sorted list of names is only needed to explain a refusal.
        let givenCount = parameters.keys.reduce(0) { $0 + (Self.allParameterNames.contains($1) ? 1 : 0) }
        func only(_ name: String) -> Bool { givenCount == 1 && parameters[name] != nil }
        var given: [String] { parameters.keys.filter(Self.allParameterNames.contains).sorted() }
        switch type {
        case .consumer:
            guard only("tripId"), let trip = try id("tripId") else { throw .wrongParameters(type, given) }
            return .trip(trip)
        case .driver:
            guard only("vehicleId"), let vehicle = try id("vehicleId") else { throw .wrongParameters(type, given) }
            return .vehicle(vehicle)
        case .deliveryDriver:
            guard only("deliveryVehicleId"), let vehicle = try id("deliveryVehicleId") else {
                throw .wrongParameters(type, given)
            }
            return .deliveryVehicle(vehicle)
        case .deliveryConsumer:
            if only("trackingId"), let tracking = try id("trackingId") { return .tracking(tracking) }
            if only("taskId"), let task = try id("taskId") { return .task(task) }
            throw .wrongParameters(type, given)
        case .server:
            guard givenCount == 0 else { throw .wrongParameters(type, given) }
            return .fleet
        }
    }

    /// Every parameter name that names a context.
    public static let allParameterNames: Set<String> = ["tripId", "vehicleId", "deliveryVehicleId", "trackingId", "taskId"]
}

/// Why request parameters do not name a valid context.
public enum ContextError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The ID is empty, too long, `*`, or has characters outside `A-Z a-z 0-9 - _ . ~ @ + =`.
    case invalidID(parameter: String)
    /// The parameters given do not fit the token type.
    case wrongParameters(TokenType, [String])

    public var description: String {
        switch self {
        case .invalidID(let parameter):
            "\(parameter) must be 1 to \(ContextID.maxLength) characters of A-Z a-z 0-9 - _ . ~ @ + = (never '*')"
        case .wrongParameters(let type, let given):
            "a \(type) token needs \(Self.expectation(for: type)); got \(given.isEmpty ? "none" : given.joined(separator: ", "))"
        }
    }

    private static func expectation(for type: TokenType) -> String {
        switch type {
        case .consumer: "tripId"
        case .driver: "vehicleId"
        case .deliveryDriver: "deliveryVehicleId"
        case .deliveryConsumer: "trackingId or taskId (exactly one)"
        case .server: "no context parameter"
        }
    }
}
