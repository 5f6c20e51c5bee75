import Testing
import TokenGateCore

@testable import TokenGateHTTP

/// The token route's query as browsers and `URLSearchParams` write it: percent-escapes as UTF-8, `+` a space, a
/// malformed escape kept; names decoded the same way; bytes that are not UTF-8 refused, never repaired. Both doors
/// read the query here.
@Suite struct QueryParametersTests {
    static func parse(_ query: String) throws(TokenGateError) -> [String: String] {
        try QueryParameters.parse(query, limits: RequestLimits())
    }

    @Test(arguments: [
        ("tripId=trip-42", "trip-42"), ("tripId=p1+space", "p1 space"), ("tripId=p1%20space", "p1 space"), ("tripId=p1%2Bspace", "p1+space"),
        ("tripId=caf%C3%A9", "caf\u{E9}"), ("tripId=caf%c3%a9", "caf\u{E9}"), ("tripId=%F0%9F%9A%95", "\u{1F695}"), ("tripId=a=b", "a=b"),
        ("tripId=100%", "100%"), ("tripId=%zz", "%zz"), ("tripId=%4", "%4"), ("tripId=%2", "%2"), ("tripId=%25", "%"), ("tripId=+++", "   "),
        ("trip%49d=x", "x"), ("tripId=", ""), ("tripId", ""), ("tripId=%EF%BF%BD", "\u{FFFD}"),
    ])
    func decodesAsBrowsersEncode(query: String, tripID: String) throws {
        let parameters = try Self.parse(query)
        #expect(parameters.count == 1)
        #expect(parameters["tripId"]?.utf8.elementsEqual(tripID.utf8) == true)
    }

    @Test func aQueryWithNothingToDecodeIsTakenAsItIs() throws {
        #expect(try Self.parse("deliveryVehicleId=van-7&taskId=t.1~x") == ["deliveryVehicleId": "van-7", "taskId": "t.1~x"])
        #expect(try Self.parse("taskIds=a,b%2Cc") == ["taskIds": "a,b,c"])
    }

    @Test(arguments: [
        ("tripId=%FF", ContextID.Field.tripId), ("vehicleId=a%C3", .vehicleId), ("taskIds=ok,%ED%A0%80", .taskIds),
        ("trackingId=%C0%AF", .trackingId), ("taskId=%F4%90%80%80", .taskId),
    ])
    func bytesThatAreNotUTF8AreRefusedNamingTheParameter(query: String, field: ContextID.Field) {
        #expect(throws: TokenGateError(refusing: ContextID.Refusal(field, .invalidUTF8))) { try Self.parse(query) }
        do {
            _ = try Self.parse(query)
        } catch {
            #expect(error.refusedID == ContextID.Refusal(field, .invalidUTF8))
            #expect(error.publicMessage == ContextID.Refusal(field, .invalidUTF8).description)
        }
    }

    @Test func limitsRepeatsAndUnknownNamesComeFirstAndNameNothing() throws {
        func refusal(_ query: String) -> TokenGateError? {
            do {
                _ = try Self.parse(query)
                return nil
            } catch { return error }
        }
        // Past 256 bytes decoded, a context ID is too long whatever it holds; an unknown parameter is only too long.
        let long = String(repeating: "%C3%A9", count: 129)
        #expect(refusal("tripId=\(long)")?.refusedID == ContextID.Refusal(.tripId, .tooLong))
        #expect(refusal("other=\(long)")?.refusedID == nil)
        #expect(refusal("other=\(long)")?.reason == "a query parameter is longer than 256 bytes")
        // A list of task IDs is bounded by the URL's limit, not one ID's.
        #expect(try Self.parse("taskIds=" + Array(repeating: String(repeating: "x", count: 64), count: 5).joined(separator: ","))["taskIds"] != nil)
        #expect(refusal("tripId=a&tripId=b")?.reason == "a query parameter is repeated")
        #expect(refusal("tripId=%FF&admin=1")?.refusedID == nil, "an unknown name is said before a value's encoding")
        #expect(refusal("contextId=x")?.refusedID == nil)
        #expect(refusal("a&b&c&d&e&f&g&h&i")?.reason == "too many query parameters")
    }
}
