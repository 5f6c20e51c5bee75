import JOSE
import Testing

@testable import TokenGateCore

/// A cached token is kept split (shared header, raw signature) but always handed out as the exact text it came as.
@Suite struct DeliveredTokenTests {
    static let now: Int64 = 1_700_000_000

    static func signed(_ algorithm: JWSAlgorithm, keyID: String = "key-1", trip: String = "trip-1") throws -> String {
        try JWSSigner(key: JWSKey.generate(algorithm, keyID: keyID)).sign(claims: [
            "iss": "svc@example.iam.gserviceaccount.com", "aud": "https://fleetengine.googleapis.com/",
            "iat": .integer(now), "exp": .integer(now + 3600), "authorization": .object(["tripid": .string(trip)]),
        ])
    }

    /// What a response writer receives, joined.
    static func written(_ token: DeliveredToken) -> String {
        var bytes: [UInt8] = []
        token.write { bytes += $0 }
        return String(decoding: bytes, as: UTF8.self)
    }

    @Test(arguments: [JWSAlgorithm.rs256, .ps256, .es256, .edDSA, .hs256])
    func aSignedTokenIsWrittenAsTheTextItCameAs(algorithm: JWSAlgorithm) throws {
        let compact = try Self.signed(algorithm)
        let token = DeliveredToken(compact: compact, issuedAt: Self.now, expiresAt: Self.now + 3600, sharingHeaderIn: TokenHeaderSegments())
        #expect(token.compact == compact)
        #expect(Self.written(token) == compact)
        #expect(token.byteCount == compact.utf8.count)
        #expect(token.isJSONSafe)
        #expect(token == DeliveredToken(compact: compact, issuedAt: Self.now, expiresAt: Self.now + 3600))
    }

    @Test(arguments: [
        "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.Zh",  // the signature's last character has bits past its bytes
        "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.Zg==",  // padded
        "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0.",  // no signature
        "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ4In0",  // two segments
        "a.b.c.Zm9v",  // four
        "a\"b\\c\nd",  // not a JWS at all
        "",
    ])
    func textThatDoesNotSplitCanonicallyIsKeptAsItCame(compact: String) {
        let token = DeliveredToken(compact: compact, issuedAt: 1, expiresAt: 2, sharingHeaderIn: TokenHeaderSegments())
        #expect(token.compact == compact)
        #expect(Self.written(token) == compact)
        #expect(token.byteCount == compact.utf8.count)
    }

    @Test func tokensWithOneHeaderShareItsBytes() throws {
        let headers = TokenHeaderSegments()
        let first = DeliveredToken(compact: try Self.signed(.es256, trip: "trip-1"), issuedAt: 1, expiresAt: 2, sharingHeaderIn: headers)
        let second = DeliveredToken(compact: try Self.signed(.es256, trip: "trip-2"), issuedAt: 1, expiresAt: 2, sharingHeaderIn: headers)
        let other = DeliveredToken(compact: try Self.signed(.es256, keyID: "key-2"), issuedAt: 1, expiresAt: 2, sharingHeaderIn: headers)
        #expect(first.headerStorage != nil && first.headerStorage == second.headerStorage)
        #expect(other.headerStorage != first.headerStorage)
        #expect(first != second)
    }

    @Test func tokensWithOneHeaderShareTheStartOfTheirPayloads() throws {
        let headers = TokenHeaderSegments()
        let compacts = try (1...3).map { try Self.signed(.rs256, trip: "trip-\($0)") }
        let tokens = compacts.map { DeliveredToken(compact: $0, issuedAt: Self.now, expiresAt: Self.now + 3600, sharingHeaderIn: headers) }
        let first = try #require(tokens[0].sharedPayload)
        let second = try #require(tokens[1].sharedPayload)
        // The first token's payload is the one kept: all of it is shared; the next share it up to the trip's ID.
        #expect(first.count == compacts[0].split(separator: ".")[1].utf8.count + 1)
        #expect(second.storage == first.storage && tokens[2].sharedPayload?.storage == first.storage)
        #expect(second.count > 40 && second.count < first.count)
        for (token, compact) in zip(tokens, compacts) {
            #expect(Self.written(token) == compact)
            #expect(token.compact == compact)
            #expect(token.byteCount == compact.utf8.count)
        }
        // Equal by text, whatever was shared.
        #expect(tokens[1] == DeliveredToken(compact: compacts[1], issuedAt: Self.now, expiresAt: Self.now + 3600))
        #expect(tokens[1] != tokens[2])
    }

    @Test func theHeaderTableIsBoundedAndKeepsSharingTheNewest() {
        let headers = TokenHeaderSegments()
        let segments = (0..<40).map { Array("header-\($0).".utf8) }
        for segment in segments { _ = headers.shared(segment) }
        let newest = headers.shared(segments[39]).withUnsafeBufferPointer { $0.baseAddress }
        #expect(headers.shared(segments[39]).withUnsafeBufferPointer { $0.baseAddress } == newest)
        #expect(headers.count == 16)
    }
}
