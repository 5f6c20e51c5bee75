/// The kinds of Fleet Engine token TokenGate hands out, each scoped by its `authorization` claim.
///
/// See the reference's section 2: the type decides which context a request must name and which claim the token
/// carries. `server` is the on-demand admin token with wildcards: trusted backends only, never a phone.
public enum TokenType: String, Sendable, Hashable, CaseIterable, Comparable, CustomStringConvertible {
    /// Rider app, trip sharing: `{"tripid": "<trip>"}`.
    case consumer
    /// On-demand driver app: `{"vehicleid": "<vehicle>"}`.
    case driver
    /// Last-mile delivery driver app (untrusted): `{"deliveryvehicleid": "<vehicle>"}`.
    case deliveryDriver = "delivery-driver"
    /// Shipment tracking: `{"trackingid": "<id>"}` or `{"taskid": "<id>"}`.
    case deliveryConsumer = "delivery-consumer"
    /// On-demand admin: `{"tripid": "*", "vehicleid": "*"}`. Opens the whole fleet.
    case server

    /// Whether a token of this type may be handed to an app on a phone or in a browser.
    public var isClientFacing: Bool { self != .server }

    public var description: String { rawValue }

    public static func < (lhs: TokenType, rhs: TokenType) -> Bool {
        allCases.firstIndex(of: lhs)! < allCases.firstIndex(of: rhs)!
    }
}
