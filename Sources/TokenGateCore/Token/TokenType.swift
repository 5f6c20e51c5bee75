/// The kinds of Fleet Engine token TokenGate hands out, each scoped by its `authorization` claim.
///
/// The type decides which context a request must name and which claim the token carries (docs/http-api.md lists
/// them). The wildcard types (`fleet-reader`, `delivery-fleet-reader`, `server`) are granted only by name
/// (`whole-fleet`), and `server` only to a client marked `allowServerTokens`.
public enum TokenType: String, Sendable, Hashable, CaseIterable, Comparable, CustomStringConvertible {
    /// Rider app, trip sharing: `{"tripid": "<trip>"}`.
    case consumer
    /// On-demand driver app: `{"vehicleid": "<vehicle>"}`.
    case driver
    /// Last-mile delivery driver app (untrusted): `{"deliveryvehicleid": "<vehicle>"}`.
    case deliveryDriver = "delivery-driver"
    /// Last-mile delivery driver on a managed device: `{"deliveryvehicleid": "<vehicle>", "taskid": "<task>" or "*"}`.
    case trustedDeliveryDriver = "trusted-delivery-driver"
    /// Shipment tracking: `{"trackingid": "<id>"}` or `{"taskid": "<id>"}`.
    case deliveryConsumer = "delivery-consumer"
    /// Batch task operations of a delivery backend: `{"taskids": ["<task>", …]}`.
    case batchTasks = "batch-tasks"
    /// The unified fleet reader: every on-demand and delivery ID claim `*`, for dashboards and fleet tracking.
    case fleetReader = "fleet-reader"
    /// The delivery fleet reader: `{"taskid": "*", "trackingid": "*", "deliveryvehicleid": "*"}`.
    case deliveryFleetReader = "delivery-fleet-reader"
    /// On-demand admin: `{"tripid": "*", "vehicleid": "*"}`. Opens the whole fleet.
    case server

    /// Whether the type's claims are wildcards over a whole fleet (granted only as `whole-fleet`).
    public var isWholeFleet: Bool {
        switch self {
        case .fleetReader, .deliveryFleetReader, .server: true
        default: false
        }
    }

    public var description: String { rawValue }

    public static func < (lhs: TokenType, rhs: TokenType) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}
