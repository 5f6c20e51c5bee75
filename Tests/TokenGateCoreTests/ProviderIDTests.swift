import Testing
import TokenGateCore

@Suite struct ProviderIDTests {
    @Test(arguments: ["demo-fleet", "acme-rides-123456", "abcdef", "a23456789012345678901234567890"])
    func acceptsGoogleCloudProjectIDs(text: String) {
        #expect(ProviderID(text)?.rawValue == text)
    }

    @Test(arguments: [
        "", "short", "Demo-fleet", "1demo-fleet", "demo-fleet-", "demo_fleet", "demo fleet",
        "a234567890123456789012345678901", "demo/../x", "*",
    ])
    func rejectsAnythingElse(text: String) {
        #expect(ProviderID(text) == nil)
    }
}
