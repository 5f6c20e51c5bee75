import Foundation
import HTTPTypes
package import JOSE
import TokenGateCore

/// The HTTP contract of the public and the admin listener, as an OpenAPI 3.1 document: every route, parameter,
/// response body and error code, with examples. Served at `/openapi.json` on the admin listener; a copy is
/// checked in beside this file (`openapi.json`), and a test keeps both, and the routers, in agreement.
///
/// Written by hand per operation (so a test comparing it with the routers means something), with the lists that
/// must not drift taken from the code: token types from `TokenType`, error codes and their statuses from
/// `TokenGateError`.
package enum OpenAPIDocument {
    /// The document.
    package static var json: JSONValue {
        .object([
            "openapi": "3.1.0",
            "info": .object([
                "title": "TokenGate",
                "version": "1",
                "description": """
                Short-lived Google Fleet Engine tokens for rider, driver and delivery apps, per trip or vehicle, \
                for many tenants (providers). The public listener serves tokens, JWKS and health; the admin \
                listener (loopback by default) serves metrics, health and this document.
                """,
            ]),
            "servers": [.object(["url": "http://127.0.0.1:8080", "description": "the public listener (server.host, server.port)"])],
            "tags": [
                .object(["name": "tokens", "description": "Fleet Engine tokens and the keys that verify them"]),
                .object(["name": "samples", "description": "drop-in routes of Google's sample token servers (compatibility: google-samples)"]),
                .object(["name": "health", "description": "liveness and readiness"]),
                .object(["name": "admin", "description": "the admin listener only (server.admin)"]),
            ],
            "paths": .object(paths),
            "components": .object([
                "securitySchemes": .object([
                    "bearer": .object([
                        "type": "http", "scheme": "bearer",
                        "description": "An API key of a trusted backend, or the app user's session JWT from the tenant's identity provider.",
                    ])
                ]),
                "schemas": .object(schemas),
            ]),
        ])
    }

    /// The document as bytes.
    package static var bytes: [UInt8] { JSON.serialize(json) }

    static let adminServers: JSONValue = [.object(["url": "http://127.0.0.1:9464", "description": "the admin listener (server.admin)"])]

    static var paths: JSONObject {
        [
            "/v1/providers/{providerId}/tokens/{tokenType}": .object([
                "parameters": [providerID, tokenTypeParameter],
                "get": .object([
                    "operationId": "getToken",
                    "tags": ["tokens"],
                    "summary": "A token for one context",
                    "description": .string(
                        """
                        A verified token for the context the query names: `tripId` (consumer), `vehicleId` (driver), \
                        `deliveryVehicleId` (delivery-driver), `deliveryVehicleId` and `taskId` (trusted-delivery-driver; \
                        `taskId=*` only for clients allowed every task), `trackingId` or `taskId` (delivery-consumer), \
                        `taskIds` (batch-tasks: 1 to \(TaskIDList.maxCount) comma-separated task IDs), none \
                        (fleet-reader, delivery-fleet-reader, server: granted only by name). \
                        A provider with a `response:` mapping answers 200 in the shape its apps already parse instead.
                        """),
                    "security": [.object(["bearer": []])],
                    "parameters": .array(
                        ["tripId", "vehicleId", "deliveryVehicleId", "trackingId", "taskId"].map(contextParameter) + [taskIDsParameter]),
                    "responses": responses(
                        .token,
                        [
                            "200": .object([
                                "description": "The token, verified by the gateway before it was cached or handed out.",
                                "headers": .object([
                                    "Cache-Control": noStore, "X-Request-ID": requestIDHeader, "RateLimit-Policy": rateLimitPolicyHeader,
                                    "RateLimit": rateLimitHeader,
                                ]),
                                "content": json(schema: "Token", example: tokenExample),
                            ])
                        ]),
                ]),
                "options": .object([
                    "operationId": "preflightToken",
                    "tags": ["tokens"],
                    "summary": "CORS preflight (or the allowed methods)",
                    "description":
                        "Without `Origin` and `Access-Control-Request-Method` it is no preflight: 204 with `Allow` for any provider ID and type.",
                    "parameters": [
                        .object(["name": "providerId", "in": "path", "required": true, "schema": .object(["type": "string"])]),
                        .object(["name": "tokenType", "in": "path", "required": true, "schema": .object(["type": "string"])]),
                        .object(["name": "Origin", "in": "header", "required": false, "schema": .object(["type": "string"])]),
                        .object([
                            "name": "Access-Control-Request-Method", "in": "header", "required": false,
                            "schema": .object(["type": "string"]),
                        ]),
                    ],
                    "responses": responses(
                        .preflight, ["204": .object(["description": "Allowed: the CORS headers, or `Allow: GET, OPTIONS` when no preflight."])]),
                ]),
            ]),
            "/v1/providers/{providerId}/samples/token/{sampleType}/{contextId}": .object([
                "parameters": [
                    providerID,
                    .object([
                        "name": "sampleType", "in": "path", "required": true,
                        "schema": .object(["type": "string", "enum": ["consumer", "driver", "delivery_driver", "delivery_consumer"]]),
                    ]),
                    contextPathParameter,
                ],
                "get": sampleOperation(
                    "getSampleToken",
                    summary: "A token on the route of Google's sample token servers (providers with `compatibility: google-samples`)"),
                "options": samplePreflight("preflightSampleToken"),
            ]),
            "/v1/providers/{providerId}/samples/token/{sampleType}": .object([
                "parameters": [
                    providerID,
                    .object([
                        "name": "sampleType", "in": "path", "required": true,
                        "schema": .object(["type": "string", "enum": ["fleet_reader"]]),
                    ]),
                ],
                "get": sampleOperation(
                    "getSampleFleetReaderToken",
                    summary: "The last-mile sample's fleet_reader token: delivery-fleet-reader if the provider issues it, else fleet-reader"),
                "options": samplePreflight("preflightSampleFleetReaderToken"),
            ]),
            "/v1/providers/{providerId}/jwks.json": .object([
                "parameters": [providerID],
                "get": .object([
                    "operationId": "getJWKS",
                    "tags": ["tokens"],
                    "summary": "The public keys of the provider's signers",
                    "responses": responses(
                        .jwks,
                        [
                            "200": .object([
                                "description": "A JWKS (RFC 7517), public keys only.", "content": json(schema: "JWKS", example: jwksExample),
                            ])
                        ]),
                ]),
            ]),
            "/healthz": .object(["get": health]),
            "/readyz": .object(["get": readiness]),
            "/readyz/providers/{providerId}": .object(["get": providerReadiness]),
            "/metrics": .object([
                "get": .object([
                    "operationId": "getMetrics",
                    "tags": ["admin"],
                    "servers": adminServers,
                    "summary": "Prometheus metrics (text format 0.0.4)",
                    "responses": responses(
                        .admin,
                        [
                            "200": .object([
                                "description": "Every metric; docs/operations.md lists them with their meaning.",
                                "content": .object([
                                    "text/plain": .object([
                                        "schema": .object(["type": "string"]),
                                        "example":
                                            "tokengate_tokens_served_total{provider=\"acme-rides\",token_type=\"consumer\",cache=\"hit\"} 42\n",
                                    ])
                                ]),
                            ])
                        ]),
                ])
            ]),
            "/admin/v1/providers/{providerId}/contexts/{tokenType}/{contextId}/end": .object([
                "parameters": [
                    providerID,
                    .object([
                        "name": "tokenType", "in": "path", "required": true,
                        "description":
                            "The kind of entity: consumer (a trip), driver (a vehicle), delivery-driver or trusted-delivery-driver (a delivery vehicle), delivery-consumer (a tracking or task ID).",
                        "schema": .object([
                            "type": "string",
                            "enum": ["consumer", "driver", "delivery-driver", "trusted-delivery-driver", "delivery-consumer"],
                        ]),
                    ]),
                    contextPathParameter,
                ],
                "post": lifecycleOperation(
                    "endContext",
                    summary:
                        "End a trip, vehicle, task or shipment: evict its cached tokens and refuse new ones (410 context_ended) for endedContexts.refuseFor",
                    example: .object([
                        "providerId": "acme-rides", "tokenType": "consumer", "contextId": "trip-42", "ended": true,
                        "endedUntil": 1_795_378_271, "evictedTokens": 1,
                    ])),
                "delete": lifecycleOperation(
                    "liftEndedContext", summary: "Lift an ended context: tokens are issued for it again",
                    example: .object([
                        "providerId": "acme-rides", "tokenType": "consumer", "contextId": "trip-42", "ended": false, "wasEnded": true,
                    ])),
            ]),
            "/admin/v1/providers/{providerId}/contexts/end": .object([
                "parameters": [providerID],
                "post": .object([
                    "operationId": "endContexts",
                    "tags": ["admin"],
                    "servers": adminServers,
                    "summary": "End up to 1,000 trips, vehicles, tasks or shipments of one provider at once, all or none",
                    "description":
                        "As endContext for each. When the provider's list of ended contexts has no room for all of them (endedContexts.maxEntries), none is ended: 507 ended_list_full. Takes an admin key (`adminKeys:`, global or the provider's).",
                    "security": [.object(["bearer": []])],
                    "requestBody": .object([
                        "required": true,
                        "content": .object([
                            "application/json": .object([
                                "schema": .object(["$ref": "#/components/schemas/ContextBatch"]),
                                "example": .object([
                                    "contexts": [
                                        .object(["tokenType": "consumer", "contextId": "trip-42"]),
                                        .object(["tokenType": "driver", "contextId": "vehicle-7"]),
                                    ]
                                ]),
                            ])
                        ]),
                    ]),
                    "responses": responses(
                        .lifecycle,
                        [
                            "200": .object([
                                "description": "Every one ended.",
                                "headers": .object(["Cache-Control": noStore, "X-Request-ID": requestIDHeader]),
                                "content": json(
                                    schema: "ContextBatchEnded",
                                    example: .object([
                                        "providerId": "acme-rides", "ended": 2, "endedUntil": 1_795_378_271, "evictedTokens": 1,
                                    ])),
                            ])
                        ]),
                ]),
            ]),
            "/events/v1/pubsub/{providerId}": .object([
                "parameters": [providerID],
                "post": .object([
                    "operationId": "receiveFleetEvent",
                    "tags": ["admin"],
                    "servers": adminServers,
                    "summary":
                        "The push endpoint of a Pub/Sub subscription carrying the provider's Fleet Engine log entries: a finished trip, task or vehicle is ended as by endContext",
                    "description":
                        "Takes the OIDC token Pub/Sub signs for the subscription's push identity (events: in config.yaml), not an admin key. Every verified push is answered 200 with what it did, so Pub/Sub retries none that cannot be acted on; one whose ends do not fit the provider's list is 507 and delivered again. A push that does not verify, or names no provider with events, is 401; refused pushes are limited per client address (429).",
                    "security": [.object(["bearer": []])],
                    "requestBody": .object([
                        "required": true,
                        "content": .object([
                            "application/json": .object([
                                "schema": .object(["$ref": "#/components/schemas/PubSubPush"]),
                                "example": .object([
                                    "message": .object(["data": "eyJqc29uUGF5bG9hZCI6ey4uLn19", "messageId": "136969346945"]),
                                    "subscription": "projects/acme-rides/subscriptions/tokengate-fleet-events",
                                ]),
                            ])
                        ]),
                    ]),
                    "responses": responses(
                        .fleetEvents,
                        [
                            "200": .object([
                                "description": "Acknowledged, with what the push did.",
                                "headers": .object(["Cache-Control": noStore, "X-Request-ID": requestIDHeader]),
                                "content": json(
                                    schema: "FleetEventReceipt",
                                    example: .object([
                                        "outcome": "ended", "contexts": [.object(["tokenType": "consumer", "contextId": "trip-42"])],
                                    ])),
                            ])
                        ]),
                ]),
            ]),
            "/openapi.json": .object([
                "get": .object([
                    "operationId": "getOpenAPI",
                    "tags": ["admin"],
                    "servers": adminServers,
                    "summary": "This document",
                    "responses": responses(
                        .admin,
                        [
                            "200": .object([
                                "description": "OpenAPI 3.1",
                                "content": .object(["application/json": .object(["schema": .object(["type": "object"])])]),
                            ])
                        ]),
                ])
            ]),
        ]
    }

    static var health: JSONValue {
        .object([
            "operationId": "getHealth",
            "tags": ["health"],
            "summary": "Liveness: 200 while the process serves HTTP (also on the admin listener)",
            "responses": responses(
                .admin, ["200": .object(["description": "Alive.", "content": json(schema: "Health", example: .object(["status": "ok"]))])]),
        ])
    }

    static var readiness: JSONValue {
        .object([
            "operationId": "getReadiness",
            "tags": ["health"],
            "summary":
                "Readiness: 200 while this process can serve (one tenant that cannot never makes it 503), else 503; the status alone here, with the reasons and each provider's state on the admin listener",
            "responses": responses(
                .admin,
                [
                    "200": .object([
                        "description": "The process can serve: at least one provider, every required one, its start done.",
                        "content": json(schema: "Readiness", example: readinessExample),
                    ]),
                    "503": .object([
                        "description": "No provider can serve, a required provider cannot, or the start is still waiting for first answers.",
                        "content": json(schema: "Readiness", example: nil),
                    ]),
                ]),
        ])
    }

    static var providerReadiness: JSONValue {
        .object([
            "operationId": "getProviderReadiness",
            "tags": ["admin"],
            "servers": adminServers,
            "summary": "One provider's readiness: 200 while it can serve (ready or degraded), else 503, with its state, since when and why",
            "parameters": [providerID],
            "responses": responses(
                .providerReadiness,
                [
                    "200": .object([
                        "description": "The provider can serve.",
                        "content": json(schema: "ProviderReadiness", example: providerReadinessExample),
                    ]),
                    "503": .object(["description": "The provider cannot serve.", "content": json(schema: "ProviderReadiness", example: nil)]),
                ]),
        ])
    }

    // MARK: Parameters

    static let providerID: JSONValue = .object([
        "name": "providerId", "in": "path", "required": true,
        "description": "The tenant's Google Cloud project ID.",
        "schema": .object(["type": "string", "pattern": "^[a-z][a-z0-9-]{4,28}[a-z0-9]$"]),
        "example": "acme-rides",
    ])

    static var tokenTypeParameter: JSONValue {
        .object([
            "name": "tokenType", "in": "path", "required": true,
            "schema": .object(["type": "string", "enum": .array(TokenType.allCases.map { .string($0.rawValue) })]),
            "example": "consumer",
        ])
    }

    /// Fleet Engine's rule for an ID, as far as a schema can say it: Normalization Form C and "not `*` alone" are in
    /// words only. `maxLength` counts code points, as JSON Schema and Fleet Engine count characters.
    static let contextIDRule =
        "Fleet Engine's rule: valid UTF-8 in Unicode Normalization Form C, 1 to \(ContextID.maxLength) characters (Unicode code "
        + "points), none of `/ : ? , #`, and never `*` alone. Spaces, `+`, `%`, `&`, `=`, any letter and emoji are legal."

    static let contextIDSchema: JSONValue = .object([
        "type": "string", "minLength": 1, "maxLength": .integer(Int64(ContextID.maxLength)), "pattern": "^[^/:?,#]+$",
    ])

    static func contextParameter(_ name: String) -> JSONValue {
        .object([
            "name": .string(name), "in": "query", "required": false,
            "description": .string(
                "A context ID. \(contextIDRule) Percent-encoded as UTF-8, as `URLSearchParams` writes it: `+` or `%20` is a "
                    + "space, `%2B` a plus."),
            "schema": contextIDSchema,
        ])
    }

    static var taskIDsParameter: JSONValue {
        // The pattern's repetition counts code points in Python's regular expressions (schemathesis), as Fleet Engine does.
        let id = "[^/:?,#]{1,\(ContextID.maxLength)}"
        return .object([
            "name": "taskIds", "in": "query", "required": false,
            "description": .string(
                "1 to \(TaskIDList.maxCount) distinct task IDs, comma-separated (batch-tasks), each by \(contextIDRule)"),
            "schema": .object(["type": "string", "pattern": .string("^\(id)(,\(id)){0,\(TaskIDList.maxCount - 1)}$")]),
        ])
    }

    static let contextPathParameter: JSONValue = .object([
        "name": "contextId", "in": "path", "required": true,
        "description": .string(
            "The trip (consumer), vehicle (driver), delivery vehicle (delivery_driver) or tracking ID (delivery_consumer). "
                + "\(contextIDRule) Percent-encoded as UTF-8 (`%20` a space; in a path `+` is a plus)."),
        "schema": contextIDSchema,
    ])

    /// `GET` on a sample route: the samples' own bodies, the gateway's own errors.
    static func sampleOperation(_ operationID: String, summary: String) -> JSONValue {
        .object([
            "operationId": .string(operationID),
            "tags": ["samples"],
            "summary": .string(summary),
            "description": """
            The same authentication, authorization, limits, cache and verification as `getToken`. On-demand types \
            answer `{jwt, creationTimestamp, expirationTimestamp}`, last-mile types `{token, creation_timestamp_ms, \
            expiration_timestamp_ms}` (epoch milliseconds). A provider without `compatibility: google-samples` answers 404.
            """,
            "security": [.object(["bearer": []])],
            "responses": responses(
                .samples,
                [
                    "200": .object([
                        "description": "The token in the sample's shape, verified before it was cached or handed out.",
                        "headers": .object([
                            "Cache-Control": noStore, "X-Request-ID": requestIDHeader, "RateLimit-Policy": rateLimitPolicyHeader,
                            "RateLimit": rateLimitHeader,
                        ]),
                        "content": .object([
                            "application/json": .object([
                                "schema": .object([
                                    "oneOf": [
                                        .object(["$ref": "#/components/schemas/OnDemandSampleToken"]),
                                        .object(["$ref": "#/components/schemas/LastMileSampleToken"]),
                                    ]
                                ])
                            ])
                        ]),
                    ])
                ]),
        ])
    }

    /// An admin-key operation of the lifecycle API (admin listener only).
    static func lifecycleOperation(_ operationID: String, summary: String, example: JSONValue) -> JSONValue {
        .object([
            "operationId": .string(operationID),
            "tags": ["admin"],
            "servers": adminServers,
            "summary": .string(summary),
            "description":
                "Tokens already handed out stay valid at Fleet Engine until they expire. Takes an admin key (`adminKeys:`, global or the provider's).",
            "security": [.object(["bearer": []])],
            "responses": responses(
                .lifecycle,
                [
                    "200": .object([
                        "description": "Done.",
                        "headers": .object(["Cache-Control": noStore, "X-Request-ID": requestIDHeader]),
                        "content": json(schema: "ContextLifecycle", example: example),
                    ])
                ]),
        ])
    }

    static func samplePreflight(_ operationID: String) -> JSONValue {
        .object([
            "operationId": .string(operationID),
            "tags": ["samples"],
            "summary": "CORS preflight (or the allowed methods)",
            "parameters": [
                .object(["name": "Origin", "in": "header", "required": false, "schema": .object(["type": "string"])]),
                .object(["name": "Access-Control-Request-Method", "in": "header", "required": false, "schema": .object(["type": "string"])]),
            ],
            "responses": responses(
                .preflight, ["204": .object(["description": "Allowed: the CORS headers, or `Allow: GET, OPTIONS` when no preflight."])]),
        ])
    }

    static let noStore: JSONValue = .object(["schema": .object(["type": "string", "const": "no-store"])])
    /// draft-ietf-httpapi-ratelimit-headers, on token answers of a provider with enforced limits.
    static let rateLimitPolicyHeader: JSONValue = .object([
        "description": """
        The provider, caller and context limits the request was charged to, each with its quota `q` per window `w` \
        seconds (`"caller";q=1200;w=60, "context";q=60;w=60`). Limits in `shadow: true` mode refuse nobody and are \
        not listed: what they would refuse is only counted (`tokengate_rate_limit_shadow_refusals_total`) and logged.
        """,
        "schema": .object(["type": "string"]),
    ])
    static let rateLimitHeader: JSONValue = .object([
        "description": """
        The listed limit with the fewest requests left after this one: `r` requests may follow at once, and the \
        whole burst is back in `t` seconds (`"context";r=19;t=2`). Absent when the limits are shared by replicas \
        through Redis (`sharedState:`), whose store alone knows what is left.
        """,
        "schema": .object(["type": "string"]),
    ])
    static let requestIDHeader: JSONValue = .object([
        "description": "The request's ID: its own when well-formed, else one the gateway made.",
        "schema": .object(["type": "string"]),
    ])

    // MARK: Errors

    /// The `responses` object: `success` and then the route's error responses.
    static func responses(_ route: Route, _ success: KeyValuePairs<String, JSONValue>) -> JSONValue {
        var responses = JSONObject(success)
        for (status, response) in errorResponses(for: route) { responses[status] = response }
        return .object(responses)
    }

    /// Which operation's errors: each route can answer a different subset of the codes.
    enum Route {
        case token, samples, preflight, jwks, admin, providerReadiness, lifecycle, fleetEvents
    }

    /// The error responses of `route`, grouped by status, every code listed with its fixed message. Derived from
    /// `TokenGateError.Code.allCases` and the one status mapping, never a copy of either.
    static func errorResponses(for route: Route) -> JSONObject {
        let codes: [TokenGateError.Code]
        let everywhere: [TokenGateError.Code] = [.badRequest, .requestHeaderFieldsTooLarge, .methodNotAllowed, .internalError]
        switch route {
        case .token:
            codes = TokenGateError.Code.allCases.filter { ![.notFound, .originNotAllowed, .endedListFull].contains($0) }
        case .samples:
            codes = TokenGateError.Code.allCases.filter { ![.originNotAllowed, .endedListFull].contains($0) }
        case .preflight:
            codes = [.originNotAllowed] + everywhere
        case .jwks:
            codes = [.unknownProvider, .backendUnavailable] + everywhere
        case .admin:
            codes = everywhere
        case .providerReadiness:
            codes = [.unknownProvider] + everywhere
        case .lifecycle:
            codes = [.invalidRequest, .unauthenticated, .forbidden, .unknownProvider, .unknownTokenType, .rateLimited, .endedListFull] + everywhere
        case .fleetEvents:
            codes = [.unauthenticated, .rateLimited, .endedListFull] + everywhere
        }
        var byStatus: [Int: [TokenGateError.Code]] = [:]
        for code in codes { byStatus[Int(TokenGateError(code, "").status.code), default: []].append(code) }
        var responses = JSONObject()
        for (status, codes) in byStatus.sorted(by: { $0.key < $1.key }) {
            var headers: JSONObject = ["X-Request-ID": requestIDHeader]
            if codes.contains(.unauthenticated) {
                headers["WWW-Authenticate"] = .object(["schema": .object(["type": "string", "const": #"Bearer realm="tokengate""#])])
            }
            if codes.contains(.rateLimited) {
                headers["Retry-After"] = .object(["description": "Seconds to wait.", "schema": .object(["type": "string", "pattern": "^[0-9]+$"])])
                // The limits' fields are on token answers; the lifecycle API's 429 (wrong admin keys) has none.
                if route != .lifecycle {
                    headers["RateLimit-Policy"] = rateLimitPolicyHeader
                    headers["RateLimit"] = rateLimitHeader
                }
            }
            if codes.contains(.methodNotAllowed) { headers["Allow"] = .object(["schema": .object(["type": "string"])]) }
            let description = codes.map { code in
                // A refused ID is told which parameter and which rule, in one of a fixed set of sentences.
                code == .invalidRequest && [.token, .samples, .lifecycle].contains(route)
                    ? "`\(code.rawValue)`: \(code.publicMessage), or for an ID that breaks Fleet Engine's rule the parameter and the "
                        + "rule (`tripId is not in Unicode Normalization Form C`)"
                    : "`\(code.rawValue)`: \(code.publicMessage)"
            }.joined(separator: "; ")
            responses[String(status)] = .object([
                "description": .string(description),
                "headers": .object(headers),
                "content": .object([
                    "application/json": .object([
                        "schema": .object([
                            "allOf": [.object(["$ref": "#/components/schemas/Error"])],
                            "properties": .object([
                                "error": .object([
                                    "properties": .object(["code": .object(["enum": .array(codes.map { .string($0.rawValue) })])])
                                ])
                            ]),
                        ]),
                        "example": .object(["error": .object(["code": .string(codes[0].rawValue), "message": .string(codes[0].publicMessage)])]),
                    ])
                ]),
            ])
        }
        return responses
    }

    // MARK: Schemas

    static func json(schema name: String, example: JSONValue?) -> JSONValue {
        var media: JSONObject = ["schema": .object(["$ref": .string("#/components/schemas/\(name)")])]
        if let example { media["example"] = example }
        return .object(["application/json": .object(media)])
    }

    static var schemas: JSONObject {
        let epochSeconds: JSONValue = .object(["type": "integer", "description": "epoch seconds"])
        return [
            "Token": .object([
                "type": "object",
                "required": ["token", "tokenType", "providerId", "context", "issuedAt", "expiresAt", "expiresIn", "refreshAfter"],
                "properties": .object([
                    "token": .object(["type": "string", "description": "The compact JWS (RS256), at most one hour of life."]),
                    "tokenType": .object(["type": "string", "enum": .array(TokenType.allCases.map { .string($0.rawValue) })]),
                    "providerId": .object(["type": "string"]),
                    "context": .object([
                        "type": "object",
                        "description": "The request's context parameters; `taskIds` as an array.",
                        "additionalProperties": .object([
                            "oneOf": [.object(["type": "string"]), .object(["type": "array", "items": .object(["type": "string"])])]
                        ]),
                    ]),
                    "issuedAt": epochSeconds,
                    "expiresAt": epochSeconds,
                    "expiresIn": .object(["type": "integer", "description": "seconds from now"]),
                    "refreshAfter": .object(["type": "integer", "description": "epoch seconds after which to fetch a new one"]),
                ]),
            ]),
            "Error": .object([
                "type": "object",
                "required": ["error"],
                "additionalProperties": false,
                "properties": .object([
                    "error": .object([
                        "type": "object",
                        "required": ["code", "message"],
                        "additionalProperties": false,
                        "properties": .object([
                            "code": .object(["type": "string", "enum": .array(TokenGateError.Code.allCases.map { .string($0.rawValue) })]),
                            "message": .object(["type": "string", "description": "Fixed per code; never the request's own text."]),
                        ]),
                    ])
                ]),
            ]),
            "JWKS": .object([
                "type": "object",
                "required": ["keys"],
                "properties": .object([
                    "keys": .object([
                        "type": "array",
                        "items": .object([
                            "type": "object", "required": ["kty"],
                            "properties": .object(["kty": .object(["type": "string"]), "kid": .object(["type": "string"])]),
                        ]),
                    ])
                ]),
            ]),
            "Health": .object([
                "type": "object", "required": ["status"],
                "properties": .object(["status": .object(["type": "string", "const": "ok"])]),
            ]),
            "ContextLifecycle": .object([
                "type": "object", "additionalProperties": false,
                "required": ["providerId", "tokenType", "contextId", "ended"],
                "properties": .object([
                    "providerId": .object(["type": "string"]),
                    "tokenType": .object(["type": "string"]),
                    "contextId": .object(["type": "string"]),
                    "ended": .object(["type": "boolean"]),
                    "endedUntil": .object(["type": "integer", "description": "epoch seconds"]),
                    "evictedTokens": .object(["type": "integer"]),
                    "wasEnded": .object(["type": "boolean"]),
                ]),
            ]),
            "ContextBatch": .object([
                "type": "object", "additionalProperties": false, "required": ["contexts"],
                "properties": .object([
                    "contexts": .object([
                        "type": "array", "minItems": 1, "maxItems": 1000,
                        "items": .object([
                            "type": "object", "additionalProperties": false, "required": ["tokenType", "contextId"],
                            "properties": .object([
                                "tokenType": .object([
                                    "type": "string",
                                    "enum": ["consumer", "driver", "delivery-driver", "trusted-delivery-driver", "delivery-consumer"],
                                ]),
                                "contextId": contextIDSchema,
                            ]),
                        ]),
                    ])
                ]),
            ]),
            "ContextBatchEnded": .object([
                "type": "object", "additionalProperties": false, "required": ["providerId", "ended", "endedUntil", "evictedTokens"],
                "properties": .object([
                    "providerId": .object(["type": "string"]),
                    "ended": .object(["type": "integer"]),
                    "endedUntil": .object(["type": "integer", "description": "epoch seconds"]),
                    "evictedTokens": .object(["type": "integer"]),
                ]),
            ]),
            "PubSubPush": .object([
                "type": "object", "required": ["message"],
                "properties": .object([
                    "message": .object([
                        "type": "object", "required": ["data"],
                        "properties": .object([
                            "data": .object(["type": "string", "description": "The Cloud Logging entry (JSON), base64"]),
                            "messageId": .object(["type": "string"]),
                            "publishTime": .object(["type": "string"]),
                            "attributes": .object(["type": "object"]),
                        ]),
                    ]),
                    "subscription": .object(["type": "string"]),
                ]),
            ]),
            "FleetEventReceipt": .object([
                "type": "object", "additionalProperties": false,
                "required": ["outcome", "contexts"],
                "properties": .object([
                    "outcome": .object(["type": "string", "enum": ["ended", "lifted", "kept", "duplicate", "ignored", "malformed"]]),
                    "contexts": .object([
                        "type": "array",
                        "items": .object([
                            "type": "object", "additionalProperties": false, "required": ["tokenType", "contextId"],
                            "properties": .object(["tokenType": .object(["type": "string"]), "contextId": .object(["type": "string"])]),
                        ]),
                    ]),
                    "reason": .object(["type": "string", "description": "Why the push did nothing, when it did nothing."]),
                ]),
            ]),
            "OnDemandSampleToken": .object([
                "type": "object", "additionalProperties": false,
                "required": ["jwt", "creationTimestamp", "expirationTimestamp"],
                "properties": .object([
                    "jwt": .object(["type": "string"]),
                    "creationTimestamp": .object(["type": "integer", "description": "epoch milliseconds"]),
                    "expirationTimestamp": .object(["type": "integer", "description": "epoch milliseconds"]),
                ]),
            ]),
            "LastMileSampleToken": .object([
                "type": "object", "additionalProperties": false,
                "required": ["token", "creation_timestamp_ms", "expiration_timestamp_ms"],
                "properties": .object([
                    "token": .object(["type": "string"]),
                    "creation_timestamp_ms": .object(["type": "integer", "description": "epoch milliseconds"]),
                    "expiration_timestamp_ms": .object(["type": "integer", "description": "epoch milliseconds"]),
                ]),
            ]),
            "Readiness": .object([
                "type": "object",
                "required": ["status"],
                "description": "On the public listener `status` alone; the admin listener adds the rest.",
                "properties": .object([
                    "status": .object(["type": "string", "enum": ["ready", "not_ready"]]),
                    "reasons": .object([
                        "type": "array", "items": .object(["type": "string"]), "description": "Why the process is not ready.",
                    ]),
                    "generation": .object(["type": "integer", "minimum": 1]),
                    "configSha256": .object(["type": "string", "pattern": "^[0-9a-f]{64}$"]),
                    "providers": .object(["type": "object", "additionalProperties": providerStateSchema]),
                ]),
            ]),
            "ProviderReadiness": .object([
                "allOf": [
                    providerStateSchema,
                    .object(["type": "object", "required": ["provider"], "properties": .object(["provider": .object(["type": "string"])])]),
                ]
            ]),
        ]
    }

    static let tokenExample: JSONValue = .object([
        "token": "eyJhbGciOiJSUzI1NiIsInR5cCI6IkpXVCIsImtpZCI6IjRmMWMifQ.eyJpc3MiOiIuLi4ifQ.c2lnbmF0dXJl",
        "tokenType": "consumer", "providerId": "acme-rides", "context": .object(["tripId": "trip-42"]),
        "issuedAt": 1_795_291_871, "expiresAt": 1_795_295_471, "expiresIn": 3600, "refreshAfter": 1_795_294_871,
    ])

    static let jwksExample: JSONValue = .object([
        "keys": [.object(["kty": "RSA", "kid": "4f1c", "alg": "RS256", "use": "sig", "n": "0vx7…", "e": "AQAB"])]
    ])

    static let readinessExample: JSONValue = .object(["status": "ready"])

    /// One provider's state in the admin readiness.
    static let providerStateSchema: JSONValue = .object([
        "type": "object",
        "required": ["state", "since"],
        "properties": .object([
            "state": .object(["type": "string", "enum": ["ready", "degraded", "starting", "not_ready"]]),
            "since": .object(["type": "string", "format": "date-time", "description": "When this process first saw the state (UTC)."]),
            "required": .object(["type": "boolean", "description": "Present (true) when server.readiness.requireProviders names it."]),
            "reasons": .object(["type": "array", "items": .object(["type": "string"])]),
            "fleetEngine": .object([
                "type": "object", "additionalProperties": acceptanceSchema,
                "description": "What the provider's acceptanceCheck last found, by token type (absent without a check, or before its first run).",
            ]),
        ]),
    ])

    /// One token type's last acceptance check.
    static let acceptanceSchema: JSONValue = .object([
        "type": "object", "additionalProperties": false,
        "required": ["verdict", "checkedAt", "since", "detail"],
        "properties": .object([
            "verdict": .object([
                "type": "string", "enum": ["accepted", "refused", "unknown"],
                "description": "accepted: Fleet Engine answered 404 or 200; refused: 401 or 403; unknown: no token, no answer, or another status.",
            ]),
            "lastVerdict": .object([
                "type": "string", "enum": ["accepted", "refused"],
                "description": "While checks give no verdict: the last one, which the gauge and the provider's state keep.",
            ]),
            "status": .object(["type": "integer", "description": "Fleet Engine's HTTP status."]),
            "googleStatus": .object(["type": "string", "description": "Google's error status (PERMISSION_DENIED, UNAUTHENTICATED, …)."]),
            "detail": .object(["type": "string"]),
            "checkedAt": .object(["type": "string", "format": "date-time"]),
            "since": .object(["type": "string", "format": "date-time", "description": "Since when checks have found this verdict."]),
        ]),
    ])

    static let providerReadinessExample: JSONValue = .object([
        "provider": "acme-rides", "state": "not_ready", "since": "2026-12-07T10:00:00Z",
        "reasons": [
            "IAM refuses iam.serviceAccounts.signJwt on fleet-consumer@acme-rides.iam.gserviceaccount.com (Permission denied): grant the gateway's identity roles/iam.serviceAccountTokenCreator on fleet-consumer@acme-rides.iam.gserviceaccount.com"
        ],
        "fleetEngine": .object([
            "consumer": .object([
                "verdict": "accepted", "status": 404, "googleStatus": "NOT_FOUND", "detail": "authenticated and authorised (no such resource)",
                "checkedAt": "2026-12-07T09:58:00Z", "since": "2026-12-06T08:00:00Z",
            ])
        ]),
    ])
}
