import Foundation
import Testing
import TokenGateClient

/// Fleet Engine IDs in the request URL (issue 47): any valid UTF-8 in NFC, at most 64 characters, none of
/// `/ : ? , #`; spaces, `+`, `%`, `&`, `=`, accented letters and emoji are legal. This package's tests start no
/// gateway, so each URL the provider sends is read back here by the gateway's rule (``GatewayQueryReading``); the
/// browser suite and the Android tests send the same kind of IDs through the real gateway.
@Suite struct FleetEngineIDEncodingTests {
    /// The request URL the provider sends for `context`, through an in-memory gateway.
    private func requestURL(for context: TokenContext, providerID: String = "acme-rides") async throws -> URL {
        let clock = ManualClock()
        let transport = Fixtures.mintingTransport(clock: clock)
        var configuration = Fixtures.configuration()
        configuration.providerID = providerID
        let provider = TokenProvider(configuration: configuration, transport: transport, clock: clock) { "k" }
        _ = try await provider.token(for: context)
        return try #require(transport.requests.first?.url)
    }

    @Test(arguments: [
        ("trip-42_a.b~c", "tripId=trip-42_a.b~c"),
        ("trip 42", "tripId=trip%2042"),  // never `+`, which some servers read as a plus
        ("trip+42", "tripId=trip%2B42"),
        ("véhicule-Zürich-\u{1D49C}", "tripId=v%C3%A9hicule-Z%C3%BCrich-%F0%9D%92%9C"),
        ("e\u{301}", "tripId=e%CC%81"),  // sent as given, not normalized: the gateway judges NFC
        ("a&vehicleId=v/x?y#z,w:%", "tripId=a%26vehicleId%3Dv%2Fx%3Fy%23z%2Cw%3A%25"),
        ("!'()*", "tripId=%21%27%28%29%2A"),
        ("😀", "tripId=%F0%9F%98%80"),
    ])
    func idsArePercentEncodedAsUTF8AsTheOtherClientsEncodeThem(id: String, query: String) async throws {
        let url = try await requestURL(for: .trip(id), providerID: "acme rides+é")
        let components = try #require(URLComponents(url: url, resolvingAgainstBaseURL: false))
        #expect(components.percentEncodedPath == "/v1/providers/acme%20rides%2B%C3%A9/tokens/consumer")
        #expect(components.percentEncodedQuery == query)
    }

    @Test func everyRandomIDArrivesUnchangedByTheGatewaysReading() async throws {
        var ids = FleetEngineIDs(seed: FleetEngineIDs.seed)
        let legal = ids.legal(count: 200)
        let illegal = ids.illegal()
        print("Fleet Engine ID encoding: seed \(FleetEngineIDs.seed) (TOKENGATE_ID_SEED), \(legal.count) legal and \(illegal.count) illegal IDs")
        #expect(legal.allSatisfy(FleetEngineIDs.isLegal))
        #expect(!illegal.contains(where: FleetEngineIDs.isLegal))
        // The client does not judge IDs (the gateway does): illegal ones must arrive as they were too.
        for (index, id) in (legal + illegal).enumerated() {
            let comment: Comment = "seed \(FleetEngineIDs.seed), ID #\(index) \(id.debugDescription)"
            let other = legal[(index + 1) % legal.count]
            let cases: [(TokenContext, [String: String])] = [
                (.trip(id), ["tripId": id]),
                (.vehicle(id), ["vehicleId": id]),
                (.tracking(id), ["trackingId": id]),
                (.trustedDeliveryVehicle(id, task: other), ["deliveryVehicleId": id, "taskId": other]),
            ]
            for (context, expected) in cases {
                let url = try await requestURL(for: context)
                let query = try #require(URLComponents(url: url, resolvingAgainstBaseURL: false)?.percentEncodedQuery)
                #expect(GatewayQueryReading.isPercentEncodedOnly(query), comment)
                let read = try #require(GatewayQueryReading.parameters(of: query), comment)
                // Compared as UTF-8 bytes: String's == treats "é" and "e\u{301}" as equal, the gateway does not.
                #expect(read.mapValues { Array($0.utf8) } == expected.mapValues { Array($0.utf8) }, comment)
            }
        }
    }
}

/// A query as the gateway reads it once issue 47 lands (as browsers and URLSearchParams encode): split on `&`, the
/// name before the first `=`, the value with `+` read as a space and `%XX` decoded; nil for a malformed `%` sequence
/// or bytes that are not UTF-8.
enum GatewayQueryReading {
    static func parameters(of query: String) -> [String: String]? {
        var parameters: [String: String] = [:]
        for part in query.split(separator: "&", omittingEmptySubsequences: false) {
            let name = part.prefix { $0 != "=" }
            let value = part.dropFirst(name.count + 1)
            guard let decoded = decode(value) else { return nil }
            parameters[String(name)] = decoded
        }
        return parameters
    }

    /// Whether `query` holds only `A-Z a-z 0-9 - . _ ~`, `%XX` (upper-case hex) and its `=` and `&` separators.
    static func isPercentEncodedOnly(_ query: String) -> Bool {
        let bytes = Array(query.utf8)
        var index = 0
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "%") {
                guard index + 2 < bytes.count, isUpperHex(bytes[index + 1]), isUpperHex(bytes[index + 2]) else { return false }
                index += 3
                continue
            }
            guard isUnreserved(byte) || byte == UInt8(ascii: "=") || byte == UInt8(ascii: "&") else { return false }
            index += 1
        }
        return true
    }

    private static func decode(_ value: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = value.utf8.makeIterator()
        while let byte = iterator.next() {
            switch byte {
            case UInt8(ascii: "+"): bytes.append(UInt8(ascii: " "))
            case UInt8(ascii: "%"):
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
                bytes.append(high << 4 | low)
            default: bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        default: nil
        }
    }

    private static func isUpperHex(_ byte: UInt8) -> Bool {
        (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "F")).contains(byte)
    }

    private static func isUnreserved(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
            true
        default: false
        }
    }
}
