import JOSE

/// The Fleet Engine call that checks one token type: the context its token is minted for (the configured ID in
/// the type's place) and a read-only call that type is meant for, which Fleet Engine answers only after checking
/// the token's signature, audience, lifetime, the signing account's role in the project and the claim.
///
/// | token type | context | call |
/// |---|---|---|
/// | consumer | trip ID | `GET trips/ID` (GetTrip) |
/// | driver | vehicle ID | `GET vehicles/ID` (GetVehicle) |
/// | delivery-driver, trusted-delivery-driver | delivery vehicle ID (and task ID) | `GET deliveryVehicles/ID` |
/// | delivery-consumer | tracking ID | `GET taskTrackingInfo/ID` (GetTaskTrackingInfo) |
/// | fleet-reader, server | the fleet | `GET trips/ID` |
/// | delivery-fleet-reader | the delivery fleet | `GET deliveryVehicles/ID` |
///
/// `batch-tasks` tokens only create tasks: no call reads with them, so they are not checked.
package struct AcceptanceProbe: Sendable, Equatable {
    /// The token type checked.
    package let type: TokenType
    /// What its token is minted for.
    package let context: TokenContext
    /// Fleet Engine's collection (`trips`, `vehicles`, `deliveryVehicles`, `taskTrackingInfo`).
    package let collection: String
    /// The ID the call reads.
    package let id: ContextID

    /// The probe of `type` for `id`, or nil for a type no read-only call checks.
    package init?(_ type: TokenType, id: ContextID) {
        let collection: String
        let context: TokenContext
        switch type {
        case .consumer: (context, collection) = (.trip(id), "trips")
        case .driver: (context, collection) = (.vehicle(id), "vehicles")
        case .deliveryDriver: (context, collection) = (.deliveryVehicle(id), "deliveryVehicles")
        case .trustedDeliveryDriver: (context, collection) = (.trustedDeliveryVehicle(id, task: .one(id)), "deliveryVehicles")
        case .deliveryConsumer: (context, collection) = (.tracking(id), "taskTrackingInfo")
        case .fleetReader: (context, collection) = (.fleetReader, "trips")
        case .deliveryFleetReader: (context, collection) = (.deliveryFleetReader, "deliveryVehicles")
        case .server: (context, collection) = (.fleet, "trips")
        case .batchTasks: return nil
        }
        self.type = type
        self.context = context
        self.collection = collection
        self.id = id
    }

    /// Whether a read-only call checks `type`'s tokens.
    package static func checks(_ type: TokenType) -> Bool { type != .batchTasks }

    /// The call's URL: `endpoint/v1/providers/{project}/{collection}/{id}`, the ID percent-encoded (every byte
    /// outside RFC 3986's unreserved set), since Fleet Engine's IDs may hold spaces and non-ASCII letters.
    package func url(endpoint: String, project: ProviderID) -> String {
        "\(endpoint)/v1/providers/\(URLTemplate.percentEncode(project.rawValue))/\(collection)/\(URLTemplate.percentEncode(id.rawValue))"
    }

    /// What the call is, for logs: `GET trips/{id}`; the ID is the configured one, never a caller's.
    package var call: String { "GET \(collection)/\(id.rawValue)" }
}
