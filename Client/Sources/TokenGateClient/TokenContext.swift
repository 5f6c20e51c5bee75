/// What a Fleet Engine token is for: one trip, one vehicle, one delivery vehicle, one tracked shipment or one task.
///
/// Each context maps to one gateway token type and query parameter
/// (`GET /v1/providers/{providerId}/tokens/{tokenType}?{parameter}={id}`). Server tokens (wildcard, API-key callers
/// only) are deliberately absent: they never belong on a phone.
///
/// ```swift
/// let token = try await provider.token(for: .trip(context.tripID))
/// ```
public struct TokenContext: Hashable, Sendable, CustomStringConvertible {
    /// The gateway token type and the query parameter that names the context's ID.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        /// The `{tokenType}` path segment, e.g. `consumer`.
        public let tokenType: String
        /// The query parameter carrying the ID, e.g. `tripId`.
        public let parameterName: String

        /// A rider's trip: `consumer` token, `tripId`.
        public static let trip = Kind(tokenType: "consumer", parameterName: "tripId")
        /// An on-demand driver's vehicle: `driver` token, `vehicleId`.
        public static let vehicle = Kind(tokenType: "driver", parameterName: "vehicleId")
        /// A last-mile driver's delivery vehicle: `delivery-driver` token, `deliveryVehicleId`.
        public static let deliveryVehicle = Kind(tokenType: "delivery-driver", parameterName: "deliveryVehicleId")
        /// A shipment tracked by its recipient: `delivery-consumer` token, `trackingId`.
        public static let tracking = Kind(tokenType: "delivery-consumer", parameterName: "trackingId")
        /// One delivery task: `delivery-consumer` token, `taskId`.
        public static let task = Kind(tokenType: "delivery-consumer", parameterName: "taskId")

        public var description: String { "\(tokenType)/\(parameterName)" }
    }

    /// The token type and parameter.
    public let kind: Kind
    /// The trip, vehicle, delivery vehicle, tracking or task ID.
    public let id: String

    /// A context of any kind; prefer the static factories (`.trip(id)`, `.vehicle(id)`, …).
    public init(kind: Kind, id: String) {
        self.kind = kind
        self.id = id
    }

    /// A consumer token for the rider of trip `id` (the Consumer SDK's `GMTCAuthorizationContext.tripID`).
    public static func trip(_ id: String) -> TokenContext { TokenContext(kind: .trip, id: id) }
    /// A driver token for vehicle `id` (the Driver SDK's `GMTDAuthorizationContext.vehicleID`).
    public static func vehicle(_ id: String) -> TokenContext { TokenContext(kind: .vehicle, id: id) }
    /// A delivery-driver token for delivery vehicle `id`.
    public static func deliveryVehicle(_ id: String) -> TokenContext { TokenContext(kind: .deliveryVehicle, id: id) }
    /// A delivery-consumer token for tracking ID `id`.
    public static func tracking(_ id: String) -> TokenContext { TokenContext(kind: .tracking, id: id) }
    /// A delivery-consumer token for task `id`.
    public static func task(_ id: String) -> TokenContext { TokenContext(kind: .task, id: id) }

    public var description: String { "\(kind.parameterName)=\(id)" }
}
