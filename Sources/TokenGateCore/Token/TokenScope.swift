public import JOSE

/// Reads the context a token claims to be for, from its `authorization` claim.
public enum TokenScope {
    /// The context named by `claims["authorization"]`, if it is exactly one known shape.
    public static func context(of claims: JSONObject) throws(TokenRejection) -> TokenContext {
        guard case .object(let authorization)? = claims["authorization"] else {
            throw TokenRejection(.wrongContext, "the token has no authorization claim object")
        }
        if authorization == TokenContext.fleet.authorizationClaim { return .fleet }
        guard authorization.count == 1, let (name, value) = authorization.first(where: { _ in true }),
            case .string(let raw) = value
        else {
            throw TokenRejection(.wrongContext, "the authorization claim is not one Fleet Engine context")
        }
        let parameter: String
        switch name {
        case "tripid": parameter = "tripId"
        case "vehicleid": parameter = "vehicleId"
        case "deliveryvehicleid": parameter = "deliveryVehicleId"
        case "trackingid": parameter = "trackingId"
        case "taskid": parameter = "taskId"
        default: throw TokenRejection(.wrongContext, "unknown authorization claim '\(name)'")
        }
        if raw == "*" { throw TokenRejection(.wildcardClaim, "\(name) is '*': a wildcard is never a client token") }
        let type: TokenType = ["tripId": .consumer, "vehicleId": .driver, "deliveryVehicleId": .deliveryDriver][parameter] ?? .deliveryConsumer
        do {
            return try TokenContext.parse(type: type, parameters: [parameter: raw])
        } catch {
            throw TokenRejection(.wrongContext, "the authorization claim's \(name) is not a valid ID")
        }
    }

    /// The context an unverified compact token claims; for display and for choosing what to check against.
    public static func context(ofUnverified compact: String) throws(TokenRejection) -> TokenContext {
        guard let claims = JWTVerifier.decodeUnverified(compact).claims else {
            throw TokenRejection(TokenRejection.Reason("malformed"), "the token's payload is not a JSON object")
        }
        return try context(of: claims)
    }
}
