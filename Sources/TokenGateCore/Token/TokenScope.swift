package import JOSE

/// Reads the context a token claims to be for, from its `authorization` claim.
package enum TokenScope {
    /// The context named by `claims["authorization"]`, if it is exactly one known shape. A `*` is accepted only
    /// where a type's claim has one (the whole-fleet types, a trusted driver's `taskid`).
    package static func context(of claims: JSONObject) throws(TokenRejection) -> TokenContext {
        guard case .object(let authorization)? = claims["authorization"] else {
            throw TokenRejection(.wrongContext, "the token has no authorization claim object")
        }
        for wholeFleet in [TokenContext.fleet, .fleetReader, .deliveryFleetReader] where authorization == wholeFleet.authorizationClaim {
            return wholeFleet
        }
        func string(_ name: String) throws(TokenRejection) -> String {
            guard case .string(let raw)? = authorization[name] else {
                throw TokenRejection(.wrongContext, "the authorization claim's \(name) is not a string")
            }
            if raw == "*" { throw TokenRejection(.wildcardClaim, "\(name) is '*': a wildcard is never a client token") }
            return raw
        }
        let type: TokenType
        var parameters: [String: String] = [:]
        switch Set(authorization.map(\.key)) {
        case ["tripid"]: (type, parameters["tripId"]) = (.consumer, try string("tripid"))
        case ["vehicleid"]: (type, parameters["vehicleId"]) = (.driver, try string("vehicleid"))
        case ["deliveryvehicleid"]: (type, parameters["deliveryVehicleId"]) = (.deliveryDriver, try string("deliveryvehicleid"))
        case ["trackingid"]: (type, parameters["trackingId"]) = (.deliveryConsumer, try string("trackingid"))
        case ["taskid"]: (type, parameters["taskId"]) = (.deliveryConsumer, try string("taskid"))
        case ["deliveryvehicleid", "taskid"]:
            type = .trustedDeliveryDriver
            parameters["deliveryVehicleId"] = try string("deliveryvehicleid")
            parameters["taskId"] = authorization["taskid"] == .string("*") ? "*" : try string("taskid")
        case ["taskids"]:
            guard case .array(let items)? = authorization["taskids"] else {
                throw TokenRejection(.wrongContext, "the authorization claim's taskids is not an array")
            }
            var ids: [ContextID] = []
            for item in items {
                guard case .string(let raw) = item, let id = ContextID(raw) else {
                    throw TokenRejection(.wrongContext, "the authorization claim's taskids holds an invalid task ID")
                }
                ids.append(id)
            }
            do {
                return .tasks(try TaskIDList(ids))
            } catch {
                throw TokenRejection(.wrongContext, "the authorization claim's \(error)")
            }
        default:
            throw TokenRejection(.wrongContext, "the authorization claim is not one Fleet Engine context")
        }
        do {
            return try TokenContext.parse(type: type, parameters: parameters)
        } catch {
            throw TokenRejection(.wrongContext, "the authorization claim does not name a valid context: \(error)")
        }
    }

    /// The context an unverified compact token claims; for display and for choosing what to check against.
    package static func context(ofUnverified compact: String) throws(TokenRejection) -> TokenContext {
        guard let claims = JWTVerifier.decodeUnverified(compact).claims else {
            throw TokenRejection(TokenRejection.Reason("malformed"), "the token's payload is not a JSON object")
        }
        return try context(of: claims)
    }
}
