import Foundation
import JOSE
import Testing
import TokenGateCore
import TokenGateTesting

/// Property test: random IDs that Fleet Engine takes (spaces, `+`, `%`, `&`, `=`, letters of any script, emoji,
/// controls, 64 code points) sent as curl and as `URLSearchParams` encode them, through both doors, come back in the
/// token's claim byte for byte; random IDs that break one rule are refused naming that rule. The IDs come from a
/// seeded generator: the same every run, the seed in every failure.
@Suite(.timeLimit(.minutes(5))) struct IDRoundTripTests {
    static let seed: UInt64 = 20_261_207

    /// SplitMix64: small, seedable, good enough to pick characters.
    struct Generator: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    /// Pieces of legal IDs: each in Normalization Form C and none composing with another (the one combining mark
    /// follows a `q`, which has no precomposed form with it), so any string of them is NFC.
    static let pieces: [String] = {
        let ascii = (0x20...0x7E).map { String(UnicodeScalar(UInt8($0))) }.filter { !["/", ":", "?", ",", "#"].contains($0) }
        let others = [
            "\t", "\u{1}", "\n", "\u{7F}", "\u{85}", "\u{A0}", "\u{E9}", "\u{F1}", "\u{FC}", "\u{C5}", "\u{DF}", "\u{3A9}", "\u{416}",
            "\u{645}", "\u{5E9}", "\u{915}", "\u{E01}", "\u{5317}", "\u{4EAC}", "\u{D55C}", "\u{1F695}", "\u{1F600}",
            "\u{1F44D}\u{1F3FD}", "\u{1F1EB}\u{1F1F7}", "\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}", "q\u{307}", "\u{2028}", "\u{202E}",
            "\u{FFFD}", "\u{10FFFD}",
        ]
        return ascii + ascii + others
    }()

    /// A legal ID of 1 to 64 code points; one in eight is exactly 64.
    static func legalID(_ generator: inout Generator) -> String {
        let target = generator.next() % 8 == 0 ? 64 : Int.random(in: 1...64, using: &generator)
        var id = ""
        while true {
            let piece = pieces.randomElement(using: &generator)!
            if id.unicodeScalars.count + piece.unicodeScalars.count > target { break }
            id += piece
        }
        // A single-scalar filler when the last piece did not fit; `*` alone is TokenGate's one refusal.
        while id.unicodeScalars.count < target || id.isEmpty { id += "x" }
        return id == "*" ? "*x" : id
    }

    /// How a client writes a query value.
    enum Encoding: CaseIterable {
        /// curl's `--get --data-urlencode` (7.88): `A-Z a-z 0-9 - . _ ~` as they are, a space as `+`, every other byte
        /// as `%xx` in lower case.
        case curl
        /// `encodeURIComponent` and most libraries: every byte but `A-Z a-z 0-9 - . _ ~` as `%XX` (a space `%20`).
        case percentEncoded
        /// `URLSearchParams` (the URL Standard's `application/x-www-form-urlencoded` serializer): `* - . _` and
        /// alphanumerics as they are, a space as `+`, every other byte as `%XX`.
        case urlSearchParams
        /// As little as a query needs (sub-delimiters and `@` left as they are), with lower-case hex.
        case minimal

        /// RFC 3986's unreserved characters.
        static let unreserved = Set(Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~".utf8))

        func encode(_ text: String) -> String {
            var output = ""
            for byte in text.utf8 {
                let scalar = Unicode.Scalar(byte)
                let unreserved = Self.unreserved.contains(byte)
                switch self {
                case .curl where unreserved, .percentEncoded where unreserved:
                    output.unicodeScalars.append(scalar)
                case .curl where byte == 0x20:
                    output += "+"
                case .curl:
                    output += "%" + String(byte, radix: 16).leftPadded
                case .urlSearchParams where byte == 0x20:
                    output += "+"
                case .urlSearchParams where (unreserved && byte != UInt8(ascii: "~")) || byte == UInt8(ascii: "*"):
                    output.unicodeScalars.append(scalar)
                case .minimal where unreserved || "!$'()*;=@".unicodeScalars.contains(scalar):
                    output.unicodeScalars.append(scalar)
                case .minimal:
                    output += "%" + String(byte, radix: 16).leftPadded
                default:
                    output += "%" + String(byte, radix: 16, uppercase: true).leftPadded
                }
            }
            return output
        }
    }

    /// An ID that breaks exactly `violation`, already encoded for a query (bytes that are not UTF-8 can only be sent
    /// encoded).
    static func illegalID(_ violation: ContextID.Violation, _ generator: inout Generator) -> String {
        func legal(_ length: Int) -> String {
            var id = ""
            while id.unicodeScalars.count < length { id += String(pieces.filter { $0.unicodeScalars.count == 1 }.randomElement(using: &generator)!) }
            return id
        }
        let (before, after) = (legal(Int.random(in: 0...20, using: &generator)), legal(Int.random(in: 0...20, using: &generator)))
        let encode = Encoding.curl.encode
        switch violation {
        case .empty: return ""
        case .wildcard: return "*"
        case .tooLong: return encode(legal(Int.random(in: 65...90, using: &generator)))
        case .reservedCharacter: return encode(before + ["/", ":", "?", ",", "#"].randomElement(using: &generator)! + after)
        case .notNFC: return encode(before + ["e\u{301}", "\u{212B}", "\u{2126}", "q\u{307}\u{323}"].randomElement(using: &generator)! + after)
        case .invalidUTF8:
            return encode(before) + ["%FF", "%C3", "%ED%A0%80", "%C0%AF", "%F4%90%80%80"].randomElement(using: &generator)! + encode(after)
        }
    }

    static func request(_ target: String) -> String {
        "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(GatewayFixture.apiKey)\r\n\r\n"
    }

    /// The token's `authorization` claim, read from its payload.
    static func claim(_ response: RawResponse) throws -> JSONObject {
        let body = try #require(try JSON.parse(response.body).objectValue, "\(String(decoding: response.body, as: UTF8.self))")
        let token = try #require(body["token"]?.stringValue)
        let payload = try #require(Base64URL.decode(token.split(separator: ".")[1]))
        return try #require(try JSON.parse(payload).objectValue?["authorization"]?.objectValue)
    }

    /// Issue 47's cases: `URLSearchParams` writes the trip `p1 space` as `p1+space`, and the token is for `p1 space`;
    /// a euro sign, an accent, an emoji work; `a/b` is refused naming the rule.
    @Test(arguments: [true, false])
    func theTripAskedAsABrowserAsksGetsATokenForThatTrip(fastPath: Bool) async throws {
        let fixture = try GatewayFixture(server: "{ fastPath: \(fastPath) }")
        try await fixture.withGateway { gateway in
            let connection = try await RawConnection.open(port: gateway.port)
            for (query, id) in [
                ("p1+space", "p1 space"), ("p1%20space", "p1 space"), ("p1%2Bspace", "p1+space"), ("%E2%82%AC", "\u{20AC}"),
                ("caf%C3%A9", "caf\u{E9}"), ("caf%c3%a9", "caf\u{E9}"), ("%F0%9F%9A%95", "\u{1F695}"), ("50%25+%26+x%3Dy", "50% & x=y"),
                ("x=y", "x=y"), ("100%", "100%"), ("%zz%4", "%zz%4"), ("%EF%BF%BD", "\u{FFFD}"),
            ] {
                try await connection.send(Self.request("/v1/providers/acme-rides/tokens/consumer?tripId=\(query)"))
                let response = try #require(try await connection.readResponse())
                #expect(response.status == 200, "\(query): \(String(decoding: response.body, as: UTF8.self))")
                #expect(try Self.claim(response)["tripid"]?.stringValue?.utf8.elementsEqual(id.utf8) == true, "\(query)")
            }
            #expect(fixture.probe.calls == 10, "p1+space and p1%20space are one trip, so are the two spellings of café")
            try await connection.send(Self.request("/v1/providers/acme-rides/tokens/consumer?tripId=a%2Fb"))
            let refused = try #require(try await connection.readResponse())
            #expect(refused.status == 400)
            #expect(
                String(decoding: refused.body, as: UTF8.self)
                    == #"{"error":{"code":"invalid_request","message":"tripId contains '/', ':', '?', ',' or '#'"}}"#)
        }
    }

    /// A request target is ASCII: an unencoded `é` (or a byte that is no UTF-8 at all) is refused by the HTTP parser,
    /// before any ID is read, so no byte is ever repaired into another ID.
    @Test(arguments: [[0xC3, 0xA9], [0xFF]] as [[UInt8]])
    func aRawByteAboveASCIIInTheTargetIsABadRequest(bytes: [UInt8]) async throws {
        let fixture = try GatewayFixture()
        try await fixture.withGateway { gateway in
            let connection = try await RawConnection.open(port: gateway.port)
            let head = Array(" HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(GatewayFixture.apiKey)\r\n\r\n".utf8)
            try await connection.send(Array("GET /v1/providers/acme-rides/tokens/consumer?tripId=caf".utf8) + bytes + head)
            let response = try #require(try await connection.readResponse())
            #expect(response.status == 400)
            #expect(try JSON.parse(response.body).objectValue?["error"]?.objectValue?["code"] == "bad_request")
            #expect(fixture.probe.calls == 0)
        }
    }

    @Test(arguments: [true, false])
    func everyLegalIDComesBackInTheClaimByteForByte(fastPath: Bool) async throws {
        var generator = Generator(state: Self.seed)
        var ids: [String] = []
        while ids.count < 60 {
            let id = Self.legalID(&generator)
            if !ids.contains(where: { $0.utf8.elementsEqual(id.utf8) }) { ids.append(id) }
        }
        try await Self.checkWithPython(ids)
        let fixture = try GatewayFixture(server: "{ fastPath: \(fastPath) }", audit: "{ path: audit.jsonl }")
        let logs = LogRecorder()
        try await fixture.withGateway(logs: logs) { gateway in
            let connection = try await RawConnection.open(port: gateway.port)
            for (index, id) in ids.enumerated() {
                // Each encoding names the same trip: the first mints, the others are answered from the cache.
                for encoding in Encoding.allCases {
                    let target = "/v1/providers/acme-rides/tokens/consumer?tripId=\(encoding.encode(id))"
                    try await connection.send(Self.request(target))
                    let response = try #require(try await connection.readResponse(), "seed \(Self.seed), ID \(index)")
                    #expect(response.status == 200, "seed \(Self.seed), ID \(index) \(encoding): \(String(decoding: response.body, as: UTF8.self))")
                    let claim = try Self.claim(response)
                    #expect(claim["tripid"]?.stringValue?.utf8.elementsEqual(id.utf8) == true, "seed \(Self.seed), ID \(index) \(encoding)")
                    let context = try #require(try JSON.parse(response.body).objectValue?["context"]?.objectValue)
                    #expect(context["tripId"]?.stringValue?.utf8.elementsEqual(id.utf8) == true)
                }
                #expect(fixture.probe.calls(for: .trip(try ContextID(validating: id))) == 1, "seed \(Self.seed), ID \(index): one mint")
                // A path segment too (Google's sample route), percent-encoded: `+` is a plus there. An ID of dots alone
                // cannot be a path segment: clients remove dot segments, even percent-encoded ones.
                guard !id.allSatisfy({ $0 == "." }) else { continue }
                let sample = "/v1/providers/acme-rides/samples/token/consumer/\(Encoding.percentEncoded.encode(id))"
                try await connection.send(Self.request(sample))
                let answer = try #require(try await connection.readResponse())
                #expect(answer.status == 200, "seed \(Self.seed), ID \(index) on the sample route")
                let jwt = try #require(try JSON.parse(answer.body).objectValue?["jwt"]?.stringValue)
                let payloadBytes = try #require(Base64URL.decode(jwt.split(separator: ".")[1]))
                let payload = try #require(try JSON.parse(payloadBytes).objectValue)
                #expect(payload["authorization"]?.objectValue?["tripid"]?.stringValue?.utf8.elementsEqual(id.utf8) == true)
            }
            // The audit log has one line per mint, each a JSON object that reads back to the ID, and none holds a
            // character that could break or disguise a line.
            let text = try String(contentsOfFile: "\(fixture.directory.path)/audit.jsonl", encoding: .utf8)
            let lines = text.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            #expect(lines.count == ids.count)
            for (line, id) in zip(lines, ids) {
                #expect(line.unicodeScalars.allSatisfy { Sanitized.isShownAsIs($0) || $0 == "\\" || $0 == "\"" }, "\(line)")
                let object = try #require(try JSON.parse(Array(line.utf8)).objectValue)
                #expect(object["context"]?.objectValue?["tripId"]?.stringValue?.utf8.elementsEqual(id.utf8) == true)
            }
            // Nor does any log line.
            for entry in logs.all {
                #expect(entry.text.unicodeScalars.allSatisfy { Sanitized.isShownAsIs($0) || $0 == "\\" || $0 == "\"" }, "\(entry)")
            }
        }
    }

    @Test(arguments: [true, false])
    func everyIllegalIDIsRefusedNamingTheRuleItBroke(fastPath: Bool) async throws {
        var generator = Generator(state: Self.seed &+ 1)
        let fixture = try GatewayFixture(server: "{ fastPath: \(fastPath) }")
        try await fixture.withGateway { gateway in
            let connection = try await RawConnection.open(port: gateway.port)
            for round in 0..<10 {
                for violation in ContextID.Violation.allCases {
                    let value = Self.illegalID(violation, &generator)
                    try await connection.send(Self.request("/v1/providers/acme-rides/tokens/consumer?tripId=\(value)"))
                    let response = try #require(try await connection.readResponse())
                    let error = try #require(try JSON.parse(response.body).objectValue?["error"]?.objectValue)
                    #expect(response.status == 400, "seed \(Self.seed &+ 1), round \(round), \(violation): \(value)")
                    #expect(error["code"] == "invalid_request")
                    #expect(
                        error["message"]?.stringValue == ContextID.Refusal(.tripId, violation).description,
                        "seed \(Self.seed &+ 1), round \(round), \(violation): \(value)")
                }
            }
            #expect(fixture.probe.calls == 0)
        }
    }

    /// The generator's premise, checked by another implementation: Python's `unicodedata` says every legal ID is
    /// NFC and 1 to 64 code points.
    static func checkWithPython(_ ids: [String]) async throws {
        let file = FileManager.default.temporaryDirectory.appending(path: "tokengate-ids-\(UUID().uuidString).json")
        defer { try? FileManager.default.removeItem(at: file) }
        try Data(JSON.serialize(.array(ids.map(JSONValue.string)))).write(to: file)
        let check = """
            import json, sys, unicodedata
            ids = json.load(open(sys.argv[1], encoding="utf-8"))
            bad = [i for i, s in enumerate(ids) if not (unicodedata.is_normalized("NFC", s) and 1 <= len(s) <= 64 and not set(s) & set("/:?,#"))]
            print(bad); sys.exit(1 if bad else 0)
            """
        let result = try await ChildProcess.run("python3", ["-c", check, file.path])
        #expect(result.status == 0, "not legal by Python's reading: \(result.output)")
    }
}

extension String {
    /// Two hex digits.
    fileprivate var leftPadded: String { count == 1 ? "0" + self : self }
}
