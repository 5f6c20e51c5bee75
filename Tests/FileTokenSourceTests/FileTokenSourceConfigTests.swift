import FileTokenSource
import Foundation
import Testing
import TokenGateCore

@Suite struct FileTokenSourceConfigTests {
    @Test func aMissingTokenFileIsAConfigErrorAtThePathKey() async throws {
        let fixture = try Fixture()
        let message = await fixture.loadError()
        #expect(message.contains("/config.yaml:3:9: backend.path: no such file: \(fixture.directory)/tokens.yaml"), "\(message)")
    }

    static let verify = "  verify:\n    - jwksFile: jwks.json\n      serviceAccount: tokens@acme-rides.iam.gserviceaccount.com\n"

    @Test(arguments: [
        ("  type: file\n  pathh: tokens.yaml\n" + verify, "config.yaml:3:3: backend.pathh: unknown key"),
        (
            "  type: file\n  path: tokens.yaml\n  pollInterval: 1ms\n" + verify,
            "config.yaml:4:17: backend.pollInterval: must be between 10ms and 1h"
        ),
        (
            "  type: file\n  path: tokens.yaml\n  pollInterval: soon\n" + verify,
            "config.yaml:4:17: backend.pollInterval: expected a duration"
        ),
        (
            "  type: file\n  path: tokens.yaml\n  verify:\n    - jwksUrl: https://keys.example/jwks.json\n      serviceAccount: a@b.iam.gserviceaccount.com\n",
            "backend.verify[0].jwksUrl: this backend reads keys from files only"
        ),
        (
            "  type: file\n  path: tokens.yaml\n  verify:\n    - jwksFile: nowhere.json\n      serviceAccount: a@b.iam.gserviceaccount.com\n",
            "config.yaml:5:17: backend.verify[0].jwksFile: no such file"
        ),
        ("  type: file\n  path: tokens.yaml\n", "config.yaml:2:3: backend.verify: missing required key"),
        (
            "  type: file\n  path: tokens.yaml\n  verify:\n    - jwksFile: jwks.json\n",
            "config.yaml:5:7: backend.verify[0]: missing required key 'serviceAccount'"
        ),
        ("  type: file\n" + verify, "config.yaml:2:3: backend.path: missing required key"),
    ])
    func namesFileLineColumnAndKeyOfEveryConfigurationMistake(_ section: String, _ expected: String) async throws {
        let fixture = try Fixture()
        try fixture.write("{}")
        let message = await fixture.loadError(section)
        #expect(message.contains(expected), "\(message)")
    }

    @Test(arguments: [
        ("taxi:\n  t-1: x\n", "tokens.yaml:1:1: taxi: unknown token type"),
        ("consumer:\n", "tokens.yaml:1:10: consumer: expected a mapping, got nothing"),
        ("consumer:\n  trip-42: [a, b]\n", "tokens.yaml:2:12: consumer.trip-42: expected a value, got a list"),
        ("consumer:\n  trip-42: \"eyJ", "tokens.yaml:2:16: syntax: found unexpected end of stream"),
        ("delivery-consumer:\n  shipment:\n    s-1: x\n", "tokens.yaml:2:3: delivery-consumer.shipment: unknown key"),
        ("", "tokens.yaml: the file is empty"),
    ])
    func aTokenFileOfTheWrongShapeIsAConfigErrorNamingBothFiles(_ tokens: String, _ expected: String) async throws {
        let fixture = try Fixture()
        try fixture.write(tokens)
        let message = await fixture.loadError()
        #expect(message.contains("/config.yaml:3:9: backend.path: \(fixture.directory)/\(expected)"), "\(message)")
    }

    @Test func aTokenPastedWhereAKeyBelongsNeverReachesTheError() async throws {
        let fixture = try Fixture()
        let token = try Fixture.token(.trip(.id("trip-42")))
        try fixture.write("\(token): consumer\n")
        let message = await fixture.loadError()
        #expect(message.contains("unknown token type"), "\(message)")
        for part in token.split(separator: ".").dropFirst() {
            #expect(!message.contains(part), "\(message)")
        }
    }
}
