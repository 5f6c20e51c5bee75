import Foundation
import GoogleAuth
import Testing
import TokenGateTesting

/// credentialsFile beats GOOGLE_APPLICATION_CREDENTIALS beats gcloud's file beats the metadata server.
@Suite struct OrderTests {
    /// `level` 0: all four present; each next level removes the winner of the previous one.
    @Test(arguments: 0..<4)
    func firstPresentSourceWins(level: Int) async throws {
        try await GoogleStandIn.with { standIn in
            let accounts = (0..<3).map { "order-\($0)@tg-test.iam.gserviceaccount.com" }
            var files: [String] = []
            for account in accounts { files.append(try await standIn.exportKeyFile(account)) }
            let config = try TemporaryDirectory(prefix: "gcloud")
            defer { config.remove() }
            try config.write("application_default_credentials.json", [UInt8](Data(contentsOf: URL(fileURLWithPath: files[2]))))
            var environment = ["HOME": "/nonexistent-home", "GCE_METADATA_HOST": "127.0.0.1:\(standIn.port)"]
            if level <= 1 { environment["GOOGLE_APPLICATION_CREDENTIALS"] = files[1] }
            if level <= 2 { environment["CLOUDSDK_CONFIG"] = config.path }
            let credentials = try resolve(file: level == 0 ? files[0] : nil, environment: environment)
            _ = try await credentials.accessToken()
            let expected = level < 3 ? accounts[level] : Fixture.metadataAccount
            #expect(try await standIn.lastPrincipal(of: level < 3 ? "token" : "metadata") == expected)
            #expect(credentials.summary.contains(expected) || level == 3)
            #expect(try await standIn.calls(kind: "token") + standIn.calls(kind: "metadata") == 1)
        }
    }
}
