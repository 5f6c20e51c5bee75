import HTTPTypes
import Testing

@testable import TokenGateHTTP

@Suite struct AuthorizationHeaderTests {
    // The header is read without HTTPFields' joining subscript (RequestFields); what it reads must not change.
    @Test func aSingleFieldIsReadAsSentAndSeveralAreJoinedAsBefore() {
        var headers = HTTPFields()
        headers[.userAgent] = "test"
        #expect(RequestFields(headers).authorization == nil)
        headers.append(HTTPField(name: .authorization, value: "Bearer a"))
        #expect(RequestFields(headers).authorization == "Bearer a")
        headers.append(HTTPField(name: .authorization, value: "Bearer b"))
        #expect(RequestFields(headers).authorization == "Bearer a, Bearer b")
        #expect(RequestFields(headers).authorization == headers[.authorization])
    }
}
