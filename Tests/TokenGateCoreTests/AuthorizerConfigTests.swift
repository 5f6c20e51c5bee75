import Testing

@testable import TokenGateCore

/// A client's `authorizer:` section: its defaults, the URL template and policy, the ranges, and the jwt `any` grant it
/// unlocks; every error located at the key it is about.
@Suite struct AuthorizerConfigTests {
    static let defaultURL = "https://auth.acme.test/can-access?subject={subject}&tripId={tripId}"

    /// A provider whose one client (line 5) has `authorizer` lines from line 10 on, then `allow` (a flow mapping).
    static func yaml(
        type: String = "jwt", authorizer: [String]? = ["type: http", "url: \"\(defaultURL)\""],
        allow: String = "{ consumer: any }"
    ) -> String {
        var lines = [
            "providers:",
            "  acme-rides:",
            "    backend: { type: static-key }",
            "    clients:",
            "      - name: rider-app",
            "        type: \(type)",
        ]
        if type == "jwt" {
            lines += ["        jwksUrl: https://id.acme.test/jwks", "        issuer: https://id.acme.test/", "        audience: tokengate"]
        } else {
            lines += ["        keySha256: \(String(repeating: "ab", count: 32))", "        # (no issuer)", "        # (no audience)"]
        }
        if let authorizer { lines += ["        authorizer:"] + authorizer.map { "          " + $0 } }
        lines.append("        allow: \(allow)")
        return lines.joined(separator: "\n") + "\n"
    }

    static func parse(_ text: String, diagnostics: ConfigDiagnostics = ConfigDiagnostics()) throws -> ClientConfig {
        let file = ConfigFile(path: "config.yaml", environment: [:], diagnostics: diagnostics)
        let configuration = try ConfigurationParser().parse(ConfigNode.parse(Array(text.utf8), file: file))
        return try #require(configuration.providers[ProviderID("acme-rides")!]?.clients.first)
    }

    static func error(_ text: String) -> String {
        do {
            _ = try parse(text)
            return "no error"
        } catch {
            return "\(error)"
        }
    }

    @Test func defaultsAreSixtySecondsOfCachingAndAHalfSecondTimeout() throws {
        let client = try Self.parse(Self.yaml())
        let authorizer = try #require(client.authorizer)
        #expect(authorizer.cacheFor == .seconds(60))
        #expect(authorizer.timeout == .milliseconds(500))
        #expect(authorizer.url.description == Self.defaultURL)
        #expect(authorizer.url.placeholders == [.subject, .tripId])
        // With an authorizer, a jwt client may use `any`: the authorizer decides.
        #expect(client.allow == [.consumer: .anyContext])
    }

    @Test func cacheForAndTimeoutAreRead() throws {
        let zero = try Self.parse(Self.yaml(authorizer: ["type: http", "url: \"\(Self.defaultURL)\"", "cacheFor: 0s", "timeout: 10s"]))
        #expect(zero.authorizer?.cacheFor == .zero)
        #expect(zero.authorizer?.timeout == .seconds(10))
        let loopback = try Self.parse(
            Self.yaml(authorizer: ["type: http", "url: \"http://127.0.0.1:8089/can?trip={tripId}&who={subject}\"", "timeout: 1ms"]))
        #expect(loopback.authorizer?.timeout == .milliseconds(1))
    }

    @Test func anAPIKeyClientMayHaveAnAuthorizerToo() throws {
        let client = try Self.parse(Self.yaml(type: "api-key", allow: "{ consumer: any, driver: any }"))
        #expect(client.authorizer != nil)
    }

    static let placeholderList =
        "{subject}, {client}, {providerId}, {tokenType}, {contextId}, {tripId}, {vehicleId}, {deliveryVehicleId}, {trackingId}, {taskId}, {taskIds}"

    @Test(arguments: [
        (
            ["type: http", #"url: "https://auth.acme.test/can?user={userId}""#],
            "config.yaml:12:16: providers.acme-rides.clients[0].authorizer.url: unknown placeholder '{userId}'; expected one of: \(placeholderList)"
        ),
        (
            ["type: http", #"url: "http://auth.acme.test/can?trip={tripId}""#],
            "config.yaml:12:16: providers.acme-rides.clients[0].authorizer.url: plain http is allowed only to a loopback host; use https:// for 'auth.acme.test'"
        ),
        (
            ["type: http", #"url: "https://{subject}.acme.test/can""#],
            "config.yaml:12:16: providers.acme-rides.clients[0].authorizer.url: placeholders may appear only in the path and query, not in the host or port"
        ),
        (
            ["type: http", #"url: "https://auth.acme.test/can?trip={tripId""#],
            "config.yaml:12:16: providers.acme-rides.clients[0].authorizer.url: unterminated '{'"
        ),
        (
            ["type: http", #"url: "https://user:pw@auth.acme.test/can?trip={tripId}""#],
            "config.yaml:12:16: providers.acme-rides.clients[0].authorizer.url: the URL must not carry credentials: it is logged"
        ),
        (
            ["type: http", #"url: "ftp://auth.acme.test/can?trip={tripId}""#],
            "config.yaml:12:16: providers.acme-rides.clients[0].authorizer.url: expected an https:// URL, got the scheme 'ftp'"
        ),
        (
            ["type: http", #"url: "https://auth.acme.test/can?trip={tripId}#x""#],
            "config.yaml:12:16: providers.acme-rides.clients[0].authorizer.url: a URL fragment is never sent; remove it"
        ),
        (
            ["type: http", #"url: "https://auth.acme.test/can?trip={tripId}""#, "timeout: 20s"],
            "config.yaml:13:20: providers.acme-rides.clients[0].authorizer.timeout: expected a timeout from 1ms to 10s"
        ),
        (
            ["type: http", #"url: "https://auth.acme.test/can?trip={tripId}""#, "timeout: 0ms"],
            "config.yaml:13:20: providers.acme-rides.clients[0].authorizer.timeout: expected a timeout from 1ms to 10s"
        ),
        (
            ["type: http", #"url: "https://auth.acme.test/can?trip={tripId}""#, "timeout: soon"],
            "config.yaml:13:20: providers.acme-rides.clients[0].authorizer.timeout: expected a duration such as 90s, 5m or 1h, got 'soon'"
        ),
        (
            ["type: http", #"url: "https://auth.acme.test/can?trip={tripId}""#, "cacheFor: 25h"],
            "config.yaml:13:21: providers.acme-rides.clients[0].authorizer.cacheFor: expected a duration from 0s (no caching) to 24h"
        ),
        (
            ["type: grpc", #"url: "https://auth.acme.test/can?trip={tripId}""#],
            "config.yaml:11:17: providers.acme-rides.clients[0].authorizer.type: unknown authorizer type 'grpc'; expected http"
        ),
        (
            ["type: http"],
            "config.yaml:11:11: providers.acme-rides.clients[0].authorizer.url: missing required key"
        ),
        (
            ["type: http", #"url: "https://auth.acme.test/can?trip={tripId}""#, "retries: 3"],
            "config.yaml:13:11: providers.acme-rides.clients[0].authorizer.retries: unknown key; expected one of: cacheFor, timeout, type, url"
        ),
    ])
    func mistakesAreLocatedErrors(authorizer: [String], expected: String) {
        #expect(Self.error(Self.yaml(authorizer: authorizer)) == expected)
    }

    @Test func aJWTClientWithoutAnAuthorizerStillMayNotUseAny() {
        #expect(
            Self.error(Self.yaml(authorizer: nil))
                == "config.yaml:10:28: providers.acme-rides.clients[0].allow.consumer: a jwt client must name the session-token claim that lists its contexts ({ claim: NAME }), or have an authorizer"
        )
    }

    @Test func serverTokensStayOutOfAJWTClientsReachEvenWithAnAuthorizer() {
        #expect(
            Self.error(Self.yaml(allow: "{ server: any }"))
                == "config.yaml:13:26: providers.acme-rides.clients[0].allow.server: server tokens open the whole fleet and are never vended to a jwt client"
        )
    }

    @Test func wholeFleetTypesAreStillGrantedOnlyByNameEvenWithAnAuthorizer() {
        #expect(
            Self.error(Self.yaml(allow: "{ fleet-reader: any }"))
                == "config.yaml:13:32: providers.acme-rides.clients[0].allow.fleet-reader: fleet-reader tokens are wildcards over the whole fleet and are granted only by name: 'fleet-reader: whole-fleet'"
        )
    }

    @Test func aURLThatCarriesNoContextOfAnAllowedTypeIsWarnedAbout() throws {
        let diagnostics = ConfigDiagnostics()
        _ = try Self.parse(Self.yaml(allow: "{ consumer: any, delivery-consumer: any }"), diagnostics: diagnostics)
        #expect(
            diagnostics.all.map(\.description) == [
                "config.yaml:12:16: providers.acme-rides.clients[0].authorizer.url: the URL carries no context of delivery-consumer tokens (add {trackingId}, {taskId} or {contextId}): the authorizer cannot tell which one it is asked about"
            ])
        let quiet = ConfigDiagnostics()
        _ = try Self.parse(
            Self.yaml(
                authorizer: ["type: http", #"url: "https://auth.acme.test/{contextId}?who={subject}""#], allow: "{ consumer: any, driver: any }"),
            diagnostics: quiet)
        #expect(quiet.all.isEmpty)
    }
}

/// The URL template on its own: percent-encoding, placeholders standing for the right values, unsafe path values.
@Suite struct AuthorizerURLTemplateTests {
    static let acme = ProviderID("acme-rides")!

    @Test func everyValueIsPercentEncodedDownToTheUnreservedCharacters() throws {
        let template = try AuthorizerURLTemplate(
            parsing: "https://auth.test/{providerId}/{tokenType}?s={subject}&c={client}&t={tripId}&v={vehicleId}&id={contextId}")
        let url = template.url(subject: "rider 1/ä?&=#%", client: "rider-app", provider: Self.acme, context: .trip(ContextID("t+1=@~")!))
        #expect(
            url == "https://auth.test/acme-rides/consumer?s=rider%201%2F%C3%A4%3F%26%3D%23%25&c=rider-app&t=t%2B1%3D%40~&v=&id=t%2B1%3D%40~")
    }

    @Test func aTrustedDriversVehicleAndTaskAndABatchsTasksEachHaveTheirPlaceholder() throws {
        let template = try AuthorizerURLTemplate(
            parsing: "https://auth.test/can?v={deliveryVehicleId}&t={taskId}&ts={taskIds}&id={contextId}&trip={tripId}")
        let trusted = try TokenContext.parse(type: .trustedDeliveryDriver, parameters: ["deliveryVehicleId": "van-1", "taskId": "task-9"])
        #expect(
            template.url(subject: "s", client: "c", provider: Self.acme, context: trusted)
                == "https://auth.test/can?v=van-1&t=task-9&ts=&id=van-1&trip=")
        let batch = try TokenContext.parse(type: .batchTasks, parameters: ["taskIds": "task-1,task-2"])
        #expect(
            template.url(subject: "s", client: "c", provider: Self.acme, context: batch)
                == "https://auth.test/can?v=&t=&ts=task-1%2Ctask-2&id=&trip=")
    }

    @Test func aPathValueOfDotsOnlyIsNeverSentButInTheQueryItIsHarmless() throws {
        let template = try AuthorizerURLTemplate(parsing: "https://auth.test/users/{subject}?trip={tripId}")
        #expect(template.url(subject: "..", client: "c", provider: Self.acme, context: .trip(ContextID("t")!)) == nil)
        #expect(
            template.url(subject: "u", client: "c", provider: Self.acme, context: .trip(ContextID("..")!))
                == "https://auth.test/users/u?trip=..")
    }

    @Test(arguments: [
        ("https://auth.test/x?a={nope}", "unknown placeholder '{nope}'"),
        ("https://auth.test/x?a=}", "unmatched '}'"),
        ("https://auth.test:{tripId}/x", "placeholders may appear only in the path and query, not in the host or port"),
        ("{subject}", "the URL must start with its scheme and host"),
    ])
    func refusedTemplates(_ text: String, _ start: String) {
        #expect(throws: AuthorizerURLTemplateError.self) { try AuthorizerURLTemplate(parsing: text) }
        do {
            _ = try AuthorizerURLTemplate(parsing: text)
        } catch {
            #expect(error.message.hasPrefix(start), "\(error.message)")
        }
    }
}
