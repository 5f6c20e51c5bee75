import JOSE
import Testing
import TokenGateCore

/// Fleet Engine's ID rule, exactly: valid UTF-8, Normalization Form C (checked, never applied), at most 64
/// characters counted as Unicode code points (AIP-210), none of `/ : ? , #`; and never `*` alone.
@Suite struct ContextIDTests {
    static let taxi = "\u{1F695}"  // 🚕: one code point, two UTF-16 units, one grapheme cluster
    static let flag = "\u{1F1EB}\u{1F1F7}"  // 🇫🇷: two code points, one grapheme cluster
    static let qDot = "q\u{307}"  // q̇: no precomposed form, so NFC keeps two code points (one grapheme cluster)

    @Test func charactersAreCodePointsNotUTF16UnitsNorGraphemeClusters() throws {
        // 64 emoji: 64 code points (128 UTF-16 units, 256 bytes) fit; a 65th does not.
        let emoji64 = String(repeating: Self.taxi, count: 64)
        #expect(emoji64.utf16.count == 128 && emoji64.utf8.count == 256)
        #expect(try ContextID(validating: emoji64).rawValue == emoji64)
        #expect(throws: ContextID.Violation.tooLong) { try ContextID(validating: emoji64 + Self.taxi) }
        // 32 flags are 64 code points and fit; 33 are 33 grapheme clusters but 66 code points, and do not.
        let flags32 = String(repeating: Self.flag, count: 32)
        #expect(flags32.count == 32 && flags32.unicodeScalars.count == 64)
        #expect(ContextID(flags32) != nil)
        #expect(throws: ContextID.Violation.tooLong) { try ContextID(validating: flags32 + Self.flag) }
        // A combining sequence counts each code point: 32 of them are 64, 32 and a letter 65.
        let combined = String(repeating: Self.qDot, count: 32)
        #expect(combined.count == 32 && ContextID(combined) != nil)
        #expect(throws: ContextID.Violation.tooLong) { try ContextID(validating: combined + "x") }
        // ASCII: 64 bytes fit, 65 do not.
        #expect(ContextID(String(repeating: "x", count: 64)) != nil)
        #expect(throws: ContextID.Violation.tooLong) { try ContextID(validating: String(repeating: "x", count: 65)) }
    }

    @Test(arguments: [
        "p1 space", "p1+space", "50% & x=y", "caf\u{E9}", "\u{5317}\u{4EAC}-7", taxi, "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}",
        "a*b", "*a", "..", ".", "tab\there", "nul\u{0}", "del\u{7F}", "line\u{2028}sep", "\u{202E}rtl", "q\"uote", "back\\slash",
        "\u{FFFD}", "~!@$^()[]{};'<>|`",
    ])
    func takesEveryIDFleetEngineTakes(id: String) throws {
        #expect(try ContextID(validating: id).rawValue == id)
        #expect(try ContextID(validatingUTF8: Array(id.utf8)).rawValue == id)
    }

    @Test(arguments: [
        ("", ContextID.Violation.empty), ("a/b", .reservedCharacter), ("a:b", .reservedCharacter), ("a?b", .reservedCharacter),
        ("a,b", .reservedCharacter), ("a#b", .reservedCharacter), ("*", .wildcard),
        // Not NFC: a decomposed é, the Ångström and ohm signs (singletons: NFC makes them Å and Ω), marks out of order.
        ("e\u{301}", .notNFC), ("\u{212B}", .notNFC), ("\u{2126}", .notNFC), ("q\u{307}\u{323}", .notNFC),
        // Rules checked in order: too long before a reserved character, a reserved character before NFC.
        (String(repeating: "/", count: 65), .tooLong), ("e\u{301}/", .reservedCharacter),
    ])
    func refusesTheFirstRuleBroken(id: String, violation: ContextID.Violation) {
        #expect(throws: violation) { try ContextID(validating: id) }
        #expect(ContextID(id) == nil)
    }

    /// NFC is checked, not applied: the decomposed spelling is refused, not turned into the composed one.
    @Test func normalizationIsCheckedNotApplied() throws {
        let composed = try ContextID(validating: "caf\u{E9}")
        #expect(composed.rawValue.unicodeScalars.count == 4)
        #expect(throws: ContextID.Violation.notNFC) { try ContextID(validating: "cafe\u{301}") }
        // Swift's == on strings is canonical equivalence; the claim check compares bytes, so a token whose claim spells
        // the trip decomposed (another trip at Fleet Engine) is refused.
        #expect("caf\u{E9}" == "cafe\u{301}")
        let claims: JSONObject = ["iss": "sa@x", "sub": "sa@x", "authorization": .object(["tripid": "cafe\u{301}"])]
        #expect(throws: TokenRejection(.wrongContext, "")) { try FleetEngineClaims.checkScope(of: claims, for: .trip(composed)) }
        var exact = claims
        exact["authorization"] = .object(TokenContext.trip(composed).authorizationClaim)
        #expect(throws: Never.self) { try FleetEngineClaims.checkScope(of: exact, for: .trip(composed)) }
    }

    @Test(arguments: [[0xFF], [0xC3], [0x61, 0xC0, 0xAF], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0x61, 0x80]] as [[UInt8]])
    func refusesBytesThatAreNotUTF8(bytes: [UInt8]) {
        #expect(throws: ContextID.Violation.invalidUTF8) { try ContextID(validatingUTF8: bytes) }
    }

    /// Every refusal is one of a fixed set of sentences: the field and the rule, never the ID.
    @Test func refusalsAreFixedSentences() {
        let sentences = ContextID.Refusal.allCases.filter { $0.field == .tripId }.map(\.description)
        #expect(
            sentences == [
                "tripId is empty", "tripId is not valid UTF-8", "tripId is longer than 64 characters (Unicode code points)",
                "tripId contains '/', ':', '?', ',' or '#'", "tripId is not in Unicode Normalization Form C",
                "tripId is '*', which is never an ID",
            ])
        #expect(ContextID.Refusal(.taskIds, .notNFC).description == "an ID in taskIds is not in Unicode Normalization Form C")
        #expect(ContextID.Refusal(.contextId, .empty).description == "contextId is empty")
        #expect(ContextID.Refusal.allCases.count == 7 * 6)
    }

    /// A log line shows an ID so that it can neither break nor disguise the line, and no two IDs read the same.
    @Test(arguments: [
        ("trip-42", "trip-42"), ("p1 space", "p1 space"), ("caf\u{E9} \u{1F695}", "caf\u{E9} \u{1F695}"),
        ("a\nb", "a\\u{A}b"), ("a\r\nforged=1", "a\\u{D}\\u{A}forged=1"), ("\u{1B}[31m", "\\u{1B}[31m"), ("del\u{7F}", "del\\u{7F}"),
        ("nel\u{85}", "nel\\u{85}"), ("\u{202E}cba", "\\u{202E}cba"), ("zw\u{200D}j", "zw\\u{200D}j"), ("l\u{2028}s", "l\\u{2028}s"),
        ("nb\u{A0}sp", "nb\\u{A0}sp"), ("back\\slash", "back\\u{5C}slash"), ("q\"uote", "q\\u{22}uote"), ("\\u{A}", "\\u{5C}u{A}"),
        ("priv\u{E000}", "priv\\u{E000}"),
    ])
    func descriptionEscapesWhatCouldBreakALogLine(id: String, shown: String) throws {
        let id = try ContextID(validating: id)
        #expect(id.description == shown)
        #expect(TokenContext.trip(id).description == "tripId=\(shown)")
    }

    @Test func theIdentityOfAContextIsItsIDsAsSent() throws {
        let context = TokenContext.trustedDeliveryVehicle(try ContextID(validating: "van 3"), task: .one(try ContextID(validating: "t\n1")))
        #expect(context.identity == "deliveryVehicleId=van 3,taskId=t\n1")
        #expect(context.description == "deliveryVehicleId=van 3,taskId=t\\u{A}1")
        // The old rule's IDs keep the identity (and so the shared store's keys) they had.
        #expect(TokenContext.trip(ContextID("trip-42")!).identity == "tripId=trip-42")
    }
}
