import JOSE
import Testing
import TokenGateCore

@Suite struct TokenContextTests {
    @Test func eachTypeTakesExactlyItsParameter() throws {
        #expect(try TokenContext.parse(type: .consumer, parameters: ["tripId": "trip-1"]) == .trip(ContextID("trip-1")!))
        #expect(try TokenContext.parse(type: .driver, parameters: ["vehicleId": "v1"]) == .vehicle(ContextID("v1")!))
        #expect(
            try TokenContext.parse(type: .deliveryDriver, parameters: ["deliveryVehicleId": "dv"])
                == .deliveryVehicle(ContextID("dv")!)
        )
        #expect(try TokenContext.parse(type: .deliveryConsumer, parameters: ["trackingId": "t"]) == .tracking(ContextID("t")!))
        #expect(try TokenContext.parse(type: .deliveryConsumer, parameters: ["taskId": "t"]) == .task(ContextID("t")!))
        #expect(try TokenContext.parse(type: .server, parameters: [:]) == .fleet)
    }

    @Test(arguments: [
        ("", ContextID.Violation.empty), ("*", .wildcard), ("a/b", .reservedCharacter), ("trip:1", .reservedCharacter),
        ("trip?1", .reservedCharacter), ("trip#1", .reservedCharacter), ("a,b", .reservedCharacter),
        (String(repeating: "x", count: 65), .tooLong), ("tre\u{301}p", .notNFC),
    ])
    func refusesIDsOutsideFleetEnginesRuleNamingTheRule(id: String, violation: ContextID.Violation) {
        #expect(throws: ContextError.invalidID(ContextID.Refusal(.tripId, violation))) {
            try TokenContext.parse(type: .consumer, parameters: ["tripId": id])
        }
        // In a list the comma separates IDs: `a,,b` holds an empty one.
        let (list, inList) = id == "a,b" ? ("t1,a,,b", ContextID.Violation.empty) : ("t1,\(id)", violation)
        #expect(throws: ContextError.invalidID(ContextID.Refusal(.taskIds, inList))) {
            try TokenContext.parse(type: .batchTasks, parameters: ["taskIds": list])
        }
    }

    @Test(arguments: ["trip 1", "tr\u{00E9}p", "p1+space", "50%&x=y", "🚕", "a*b", "..", "a\u{0}b"])
    func takesEveryIDFleetEngineTakes(id: String) throws {
        #expect(try TokenContext.parse(type: .consumer, parameters: ["tripId": id]) == .trip(ContextID(id)!))
        #expect(TokenContext.trip(ContextID(id)!).authorizationClaim == JSONObject(["tripid": .string(id)]))
    }

    @Test func refusesParametersOfAnotherType() {
        #expect(throws: ContextError.wrongParameters(.consumer, ["vehicleId"])) {
            try TokenContext.parse(type: .consumer, parameters: ["vehicleId": "v1"])
        }
        #expect(throws: ContextError.wrongParameters(.deliveryConsumer, ["taskId", "trackingId"])) {
            try TokenContext.parse(type: .deliveryConsumer, parameters: ["taskId": "a", "trackingId": "b"])
        }
        #expect(throws: ContextError.wrongParameters(.server, ["tripId"])) {
            try TokenContext.parse(type: .server, parameters: ["tripId": "a"])
        }
    }

    @Test func claimsAreTheExactFleetEngineShape() {
        let claims = FleetEngineClaims.claims(
            serviceAccount: "sa@p.iam.gserviceaccount.com",
            audience: FleetEngineClaims.defaultAudience,
            context: .trip(ContextID("trip-1")!),
            issuedAt: 1_700_000_000,
            lifetime: 3600
        )
        let text = String(decoding: JSON.serialize(.object(claims)), as: UTF8.self)
        #expect(
            text
                == #"{"iss":"sa@p.iam.gserviceaccount.com","sub":"sa@p.iam.gserviceaccount.com","aud":"https://fleetengine.googleapis.com/","iat":1700000000,"exp":1700003600,"authorization":{"tripid":"trip-1"}}"#
        )
    }

    @Test func scopeCheckRefusesAnotherTripWildcardsAndAnotherType() {
        func claims(_ authorization: JSONObject) -> JSONObject {
            var claims = JSONObject()
            claims["iss"] = .string("sa@x")
            claims["sub"] = .string("sa@x")
            claims["authorization"] = .object(authorization)
            return claims
        }
        let trip = TokenContext.trip(ContextID("trip-1")!)
        #expect(throws: Never.self) { try FleetEngineClaims.checkScope(of: claims(trip.authorizationClaim), for: trip) }
        let cases: [(JSONObject, TokenRejection.Reason)] = [
            (JSONObject(["tripid": .string("trip-2")]), .wrongContext),
            (JSONObject(["tripid": .string("*")]), .wildcardClaim),
            (JSONObject(["tripid": .string("trip-1"), "vehicleid": .string("*")]), .wildcardClaim),
            (JSONObject(["vehicleid": .string("trip-1")]), .wrongContext),
            (JSONObject(["tripid": .string("trip-1"), "taskid": .string("t")]), .wrongContext),
        ]
        for (authorization, reason) in cases {
            #expect(throws: TokenRejection(reason, "")) { try FleetEngineClaims.checkScope(of: claims(authorization), for: trip) }
        }
    }
}
