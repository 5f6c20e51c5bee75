import HTTPTypes
import Testing

@testable import TokenGateHTTP

@Suite struct AuthorizationHeaderTests {
    // The route reads the header without HTTPFields' joining subscript; what it reads must not change.
    @Test func aSingleFieldIsReadAsSentAndSeveralAreJoinedAsBefore() {
        var headers = HTTPFields()
        headers[.userAgent] = "test"
        #expect(TokenRoutes.authorization(headers) == nil)
        headers.append(HTTPField(name: .authorization, value: "Bearer a"))
        #expect(TokenRoutes.authorization(headers) == "Bearer a")
        headers.append(HTTPField(name: .authorization, value: "Bearer b"))
        #expect(TokenRoutes.authorization(headers) == "Bearer a, Bearer b")
        #expect(TokenRoutes.authorization(headers) == headers[.authorization])
    }
}
