import Testing

@testable import TokenGateHTTP

/// Which request targets the event loop's fast path takes as the token route, and the parameters it reads from them:
/// exactly those the router would route there with the same values. Anything it must not read itself (a
/// percent-escape, a dot segment, a fragment) is left to the router, whose answer is then the only one.
@Suite struct TokenRouteTargetTests {
    @Test(
        arguments: [
            ("/v1/providers/acme-rides/tokens/consumer", "acme-rides", "consumer", nil),
            ("/v1/providers/acme-rides/tokens/consumer?tripId=trip-42", "acme-rides", "consumer", "tripId=trip-42"),
            ("/v1/providers/a.b_c~d/tokens/driver?", "a.b_c~d", "driver", ""),
            ("/v1/providers/p/tokens/t?a=1&b=%2F", "p", "t", "a=1&b=%2F"),
        ] as [(String, String, String, String?)])
    func plainTargetsAreRead(target: String, provider: String, type: String, query: String?) throws {
        let route = try #require(TokenRouteTarget(target))
        #expect(route.target == target)
        #expect(route.providerID == provider)
        #expect(route.tokenType == type)
        #expect(route.query == query)
    }

    @Test(arguments: [
        "/v1/providers/",
        "/v1/providers//tokens/consumer",
        "/v1/providers/acme/tokens/",
        "/v1/providers/acme/tokens",
        "/v1/providers/acme/token/consumer",
        "/v1/providers/acme/tokens/consumer/",
        "/v1/providers/acme/tokens/consumer#top",
        "/v1/providers/acme/tokens/consumer?tripId=1#top",
        "/v1/providers/ac%6De/tokens/consumer",
        "/v1/providers/../tokens/consumer",
        "/v1/providers/./tokens/consumer",
        "/v1/providers/acme/tokens/..",
        "/v1/providers/acme/x/tokens/consumer",
        "/v2/providers/acme/tokens/consumer",
        "v1/providers/acme/tokens/consumer",
        "/v1/providers/acmé/tokens/consumer",
        "",
    ])
    func everythingElseIsLeftToTheRouter(target: String) {
        #expect(TokenRouteTarget(target) == nil)
    }
}
