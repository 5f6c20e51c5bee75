/// What a Fleet Engine token is for: one trip, one vehicle, one delivery vehicle (and its task), one tracked
/// shipment, one task, a batch of tasks, or a whole fleet for a read-only dashboard.
///
/// Each context maps to one gateway token type and its query parameters
/// (`GET /v1/providers/{providerId}/tokens/{tokenType}?{parameter}={id}`). Server tokens (all wildcards, API-key
/// callers only) are deliberately absent: they never belong on a phone or in a browser.
///
/// ```swift
/// let token = try await provider.token(for: .trip(context.tripID))
/// ```
public struct TokenContext: Hashable, Sendable, CustomStringConvertible {
    /// The gateway token type and the query parameter that names the context's ID.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        /// The `{tokenType}` path segment, e.g. `consumer`.
        public let tokenType: String
        /// The query parameter carrying the ID, e.g. `tripId`; empty for the whole-fleet kinds.
        public let parameterName: String

        /// A rider's trip: `consumer` token, `tripId`.
        public static let trip = Kind(tokenType: "consumer", parameterName: "tripId")
        /// An on-demand driver's vehicle: `driver` token, `vehicleId`.
        public static let vehicle = Kind(tokenType: "driver", parameterName: "vehicleId")
        /// A last-mile driver's delivery vehicle: `delivery-driver` token, `deliveryVehicleId`.
        public static let deliveryVehicle = Kind(tokenType: "delivery-driver", parameterName: "deliveryVehicleId")
        /// A managed device's delivery vehicle and task: `trusted-delivery-driver` token, `deliveryVehicleId` (plus
        /// `taskId`).
        public static let trustedDeliveryVehicle = Kind(tokenType: "trusted-delivery-driver", parameterName: "deliveryVehicleId")
        /// A shipment tracked by its recipient: `delivery-consumer` token, `trackingId`.
        public static let tracking = Kind(tokenType: "delivery-consumer", parameterName: "trackingId")
        /// One delivery task: `delivery-consumer` token, `taskId`.
        public static let task = Kind(tokenType: "delivery-consumer", parameterName: "taskId")
        /// Several tasks: `batch-tasks` token, `taskIds` (comma-separated).
        public static let tasks = Kind(tokenType: "batch-tasks", parameterName: "taskIds")
        /// Every on-demand and delivery entity, read only: `fleet-reader` token, no parameter.
        public static let fleetReader = Kind(tokenType: "fleet-reader", parameterName: "")
        /// Every delivery entity, read only: `delivery-fleet-reader` token, no parameter.
        public static let deliveryFleetReader = Kind(tokenType: "delivery-fleet-reader", parameterName: "")

        /// Whether the kind names no ID: its token covers a whole fleet.
        public var isWholeFleet: Bool { parameterName.isEmpty }

        public var description: String { isWholeFleet ? tokenType : "\(tokenType)/\(parameterName)" }
    }

    /// One query parameter of the request.
    public struct Parameter: Hashable, Sendable {
        /// Its name, e.g. `taskId`.
        public let name: String
        /// Its value, before percent-encoding.
        public let value: String
    }

    /// The token type and parameter.
    public let kind: Kind
    /// The trip, vehicle, delivery vehicle, tracking or task ID; the comma-separated task IDs of a batch; empty for a
    /// whole fleet.
    public let id: String
    /// Query parameters beyond `kind.parameterName=id` (a trusted driver's `taskId`).
    public let extraParameters: [Parameter]

    /// A context of any kind; prefer the static factories (`.trip(id)`, `.vehicle(id)`, …).
    public init(kind: Kind, id: String, extraParameters: [Parameter] = []) {
        self.kind = kind
        self.id = id
        self.extraParameters = extraParameters
    }

    /// Every query parameter, in order.
    public var parameters: [Parameter] {
        (kind.isWholeFleet ? [] : [Parameter(name: kind.parameterName, value: id)]) + extraParameters
    }

    /// A consumer token for the rider of trip `id` (the Consumer SDK's `GMTCAuthorizationContext.tripID`).
    public static func trip(_ id: String) -> TokenContext { TokenContext(kind: .trip, id: id) }
    /// A driver token for vehicle `id` (the Driver SDK's `GMTDAuthorizationContext.vehicleID`).
    public static func vehicle(_ id: String) -> TokenContext { TokenContext(kind: .vehicle, id: id) }
    /// A delivery-driver token for delivery vehicle `id`.
    public static func deliveryVehicle(_ id: String) -> TokenContext { TokenContext(kind: .deliveryVehicle, id: id) }
    /// A trusted delivery driver's token for delivery vehicle `id` and one task, or every task with `task: "*"`
    /// (which the gateway grants only to clients allowed every task).
    public static func trustedDeliveryVehicle(_ id: String, task: String) -> TokenContext {
        TokenContext(kind: .trustedDeliveryVehicle, id: id, extraParameters: [Parameter(name: "taskId", value: task)])
    }
    /// A delivery-consumer token for tracking ID `id`.
    public static func tracking(_ id: String) -> TokenContext { TokenContext(kind: .tracking, id: id) }
    /// A delivery-consumer token for task `id`.
    public static func task(_ id: String) -> TokenContext { TokenContext(kind: .task, id: id) }
    /// A batch-tasks token for the tasks `ids`, in that order.
    public static func tasks(_ ids: [String]) -> TokenContext { TokenContext(kind: .tasks, id: ids.joined(separator: ",")) }
    /// A fleet-reader token for a read-only operator dashboard (granted only to clients named for it).
    public static let fleetReader = TokenContext(kind: .fleetReader, id: "")
    /// A delivery-fleet-reader token for a read-only delivery dashboard (granted only to clients named for it).
    public static let deliveryFleetReader = TokenContext(kind: .deliveryFleetReader, id: "")

    public var description: String {
        kind.isWholeFleet ? kind.tokenType : parameters.map { "\($0.name)=\($0.value)" }.joined(separator: ",")
    }
}
