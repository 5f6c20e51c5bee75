import JOSE
import Testing
import TokenGateCore
import TokenGateTesting

/// Every token type the gateway mints, through every backend, used at the Fleet Engine stand-in
/// (Tests/Peers/fleetengine) for the calls it is meant for and refused the neighbouring ones: the catalogue proven
/// against its consumer, not only against the gateway's own verifier (issue 47).
///
/// Each backend is a provider of one gateway, in its own project, with a service account per token type that holds
/// the type's Fleet Engine role there (``role(of:)``). Every call's status and the stand-in's verdict are checked, so
/// a refusal for another reason than the one expected (a `role` where a `claim` was meant) fails.
@Suite(.timeLimit(.minutes(5))) struct FleetEngineAcceptsTheCatalogueTests {
    /// What the stand-in answers a call: its status and verdict.
    enum Verdict: String, Sendable {
        /// 200: authenticated, the role grants the call, the claim covers the resource, and it exists.
        case ok
        /// 404: all of that, but the resource (named by the claim itself, or covered by `*`) does not exist.
        case notFound = "not_found"
        /// 403: the claim does not cover this trip, vehicle, task or tracking ID.
        case claim
        /// 403: the signing account holds no role granting the call in the URL's project.
        case role
        /// 401: the token has expired.
        case expired

        var status: Int {
            switch self {
            case .ok: 200
            case .notFound: 404
            case .claim, .role: 403
            case .expired: 401
            }
        }
    }

    /// One Fleet Engine call (path under `/v1/providers/{project}/`) and the verdict expected.
    struct Call: Sendable, CustomStringConvertible {
        var method: String
        var path: String
        var body: String?
        var verdict: Verdict

        static func get(_ path: String, _ verdict: Verdict) -> Call { Call(method: "GET", path: path, verdict: verdict) }
        static func post(_ path: String, _ body: String, _ verdict: Verdict) -> Call {
            Call(method: "POST", path: path, body: body, verdict: verdict)
        }
        static func put(_ path: String, _ body: String, _ verdict: Verdict) -> Call {
            Call(method: "PUT", path: path, body: body, verdict: verdict)
        }
        static func patch(_ path: String, _ body: String, _ verdict: Verdict) -> Call {
            Call(method: "PATCH", path: path, body: body, verdict: verdict)
        }

        /// The same call, expected to end in `verdict`.
        func expecting(_ verdict: Verdict) -> Call { Call(method: method, path: path, body: body, verdict: verdict) }

        var description: String { "\(method) \(path)" }
    }

    /// One token of the catalogue: its type and the token route's query, the calls it is meant for, and the
    /// neighbouring calls it is refused.
    struct Entry: Sendable, CustomStringConvertible {
        var type: TokenType
        var query: String
        var allowed: [Call]
        var refused: [Call]

        var context: TokenContext {
            get throws { try TokenContext.parse(type: type, parameters: QueryParameters.parse(query)) }
        }

        var description: String { query.isEmpty ? type.rawValue : "\(type.rawValue)?\(query)" }
    }

    /// The Fleet Engine role of the account that signs each type (/work/shared/reference/fleet-engine-tokens.md,
    /// section 2; the stand-in's role table). Batch task creation needs `tasks.create`, which the trusted delivery
    /// driver's role holds.
    static func role(of type: TokenType) -> String {
        switch type {
        case .consumer: "roles/fleetengine.consumerSdkUser"
        case .driver: "roles/fleetengine.driverSdkUser"
        case .deliveryDriver: "roles/fleetengine.deliveryUntrustedDriver"
        case .trustedDeliveryDriver, .batchTasks: "roles/fleetengine.deliveryTrustedDriver"
        case .deliveryConsumer: "roles/fleetengine.deliveryConsumer"
        case .fleetReader: "roles/fleetengine.viewer"
        case .deliveryFleetReader: "roles/fleetengine.deliveryFleetReader"
        case .server: "roles/fleetengine.ondemandAdmin"
        }
    }

    /// What every project holds before the first call: two trips on two vehicles, two delivery vehicles, and a task
    /// with its tracking ID on each.
    static let seed: [String: JSONObject] = [
        "trips": ["trip-1": .object(["vehicleId": "vehicle-1"]), "trip-2": .object(["vehicleId": "vehicle-2"])],
        "vehicles": ["vehicle-1": .object([:]), "vehicle-2": .object([:])],
        "deliveryVehicles": ["van-1": .object([:]), "van-2": .object([:])],
        "tasks": [
            "task-1": .object(["trackingId": "track-1", "deliveryVehicleId": "van-1"]),
            "task-2": .object(["trackingId": "track-2", "deliveryVehicleId": "van-2"]),
        ],
    ]

    static let location = #"{"lastLocation": {"location": {"latitude": 52.52, "longitude": 13.405}}}"#
    static let outcome = #"{"taskOutcome": "SUCCEEDED"}"#

    /// The catalogue, in the order its calls run in each project (a batch is created before it is updated).
    static let catalogue: [Entry] = [
        Entry(
            type: .consumer, query: "tripId=trip-1",
            allowed: [.get("trips/trip-1", .ok), .get("vehicles/vehicle-1", .ok), .post("vehicles:search", "{}", .ok)],
            refused: [
                .get("trips/trip-2", .claim), .get("vehicles/vehicle-2", .claim),
                .put("trips/trip-1?updateMask=tripStatus", #"{"tripStatus": "COMPLETE"}"#, .role),
                .put("vehicles/vehicle-1?updateMask=lastLocation", location, .role), .get("tasks/task-1", .role),
            ]),
        Entry(
            type: .driver, query: "vehicleId=vehicle-1",
            allowed: [
                .get("vehicles/vehicle-1", .ok), .put("vehicles/vehicle-1?updateMask=lastLocation", location, .ok),
                .get("trips/trip-1", .ok), .put("trips/trip-1?updateMask=tripStatus", #"{"tripStatus": "ENROUTE_TO_PICKUP"}"#, .ok),
                .post("trips:search", #"{"vehicleId": "vehicle-1"}"#, .ok),
            ],
            refused: [
                .get("vehicles/vehicle-2", .claim), .get("trips/trip-2", .claim), .post("trips:search", #"{"vehicleId": "vehicle-2"}"#, .claim),
                .put("vehicles/vehicle-1?updateMask=attributes", #"{"attributes": []}"#, .role),
                .post("trips?tripId=trip-3", #"{"vehicleId": "vehicle-1"}"#, .role), .get("vehicles", .role),
            ]),
        Entry(
            type: .deliveryDriver, query: "deliveryVehicleId=van-1",
            allowed: [.get("deliveryVehicles/van-1", .ok), .patch("deliveryVehicles/van-1?updateMask=lastLocation", location, .ok)],
            refused: [
                .get("deliveryVehicles/van-2", .claim), .patch("deliveryVehicles/van-2?updateMask=lastLocation", location, .claim),
                .patch("deliveryVehicles/van-1?updateMask=remainingVehicleJourneySegments", "{}", .role),
                .patch("tasks/task-1?updateMask=taskOutcome", outcome, .role), .get("deliveryVehicles", .role),
            ]),
        Entry(
            type: .trustedDeliveryDriver, query: "deliveryVehicleId=van-1&taskId=task-1",
            allowed: [
                .get("deliveryVehicles/van-1", .ok), .patch("deliveryVehicles/van-1?updateMask=remainingVehicleJourneySegments", "{}", .ok),
                .patch("tasks/task-1?updateMask=taskOutcome", outcome, .ok),
            ],
            refused: [
                .patch("tasks/task-2?updateMask=taskOutcome", outcome, .claim), .post("tasks?taskId=task-3", "{}", .claim),
                .get("deliveryVehicles/van-2", .claim), .get("tasks/task-1", .role), .get("tasks", .role),
            ]),
        Entry(
            type: .trustedDeliveryDriver, query: "deliveryVehicleId=van-1&taskId=*",
            allowed: [
                .post("tasks?taskId=task-4", #"{"type": "PICKUP", "deliveryVehicleId": "van-1"}"#, .ok),
                .patch("tasks/task-2?updateMask=taskOutcome", outcome, .ok),
                .patch("tasks/task-missing?updateMask=taskOutcome", outcome, .notFound),
            ],
            refused: [
                .get("deliveryVehicles/van-2", .claim), .patch("deliveryVehicles/van-2?updateMask=lastLocation", location, .claim),
                .get("tasks/task-2", .role), .get("tasks", .role),
            ]),
        Entry(
            type: .deliveryConsumer, query: "trackingId=track-1",
            allowed: [.get("taskTrackingInfo/track-1", .ok)],
            refused: [
                .get("taskTrackingInfo/track-2", .claim), .get("tasks/task-1", .role), .get("deliveryVehicles/van-1", .role),
            ]),
        Entry(
            type: .deliveryConsumer, query: "taskId=task-1",
            allowed: [.get("taskTrackingInfo/track-1", .ok)],
            refused: [
                .get("taskTrackingInfo/track-2", .claim), .get("tasks/task-1", .role),
                .patch("tasks/task-1?updateMask=taskOutcome", outcome, .role),
            ]),
        Entry(
            type: .batchTasks, query: "taskIds=batch-1,batch-2",
            allowed: [
                .post("tasks:batchCreate", #"{"requests": [{"taskId": "batch-1", "task": {}}, {"taskId": "batch-2", "task": {}}]}"#, .ok),
                .patch("tasks/batch-1?updateMask=taskOutcome", outcome, .ok),
            ],
            refused: [
                .post("tasks:batchCreate", #"{"requests": [{"taskId": "batch-2", "task": {}}, {"taskId": "batch-3", "task": {}}]}"#, .claim),
                .post("tasks?taskId=batch-3", "{}", .claim), .get("tasks/batch-1", .role), .get("tasks", .role),
            ]),
        Entry(
            type: .fleetReader, query: "",
            allowed: [
                .get("trips/trip-2", .ok), .post("trips:search", "{}", .ok), .get("vehicles", .ok), .get("deliveryVehicles", .ok),
                .get("tasks", .ok), .get("taskTrackingInfo/track-2", .ok), .get("tasks/task-missing", .notFound),
            ],
            refused: [
                .put("vehicles/vehicle-1?updateMask=lastLocation", location, .role), .post("trips?tripId=trip-4", "{}", .role),
                .patch("deliveryVehicles/van-1?updateMask=lastLocation", location, .role),
                .patch("tasks/task-1?updateMask=taskOutcome", outcome, .role),
            ]),
        Entry(
            type: .deliveryFleetReader, query: "",
            allowed: [
                .get("deliveryVehicles/van-2", .ok), .get("deliveryVehicles", .ok), .get("tasks/task-2", .ok), .get("tasks", .ok),
                .get("taskTrackingInfo/track-1", .ok), .get("deliveryVehicles/van-missing", .notFound),
            ],
            refused: [
                .get("trips/trip-1", .role), .get("vehicles/vehicle-1", .role),
                .patch("tasks/task-1?updateMask=taskOutcome", outcome, .role),
            ]),
        Entry(
            type: .server, query: "",
            allowed: [
                .post("trips?tripId=trip-5", #"{"vehicleId": "vehicle-2"}"#, .ok), .get("vehicles", .ok),
                .put("vehicles/vehicle-2?updateMask=attributes", #"{"attributes": [{"key": "zone", "value": "north"}]}"#, .ok),
                .get("trips/trip-missing", .notFound),
            ],
            refused: [.get("deliveryVehicles/van-1", .role), .get("tasks", .role), .get("taskTrackingInfo/track-1", .role)]),
    ]

    /// The table is the whole catalogue: every type, both forms of a trusted driver's and of a delivery consumer's
    /// token, and for each token a call it is meant for and a refusal by role; by claim too where its claim names
    /// an ID (whole-fleet tokens hold `*`: only their role bounds them).
    @Test func theCatalogueCoversEveryTokenTypeAndItsNeighbours() throws {
        #expect(Set(Self.catalogue.map(\.type)) == Set(TokenType.allCases))
        let contexts = try Self.catalogue.map { try $0.context }
        #expect(contexts.contains { if case .trustedDeliveryVehicle(_, .all) = $0 { true } else { false } })
        #expect(contexts.contains { if case .trustedDeliveryVehicle(_, .one) = $0 { true } else { false } })
        #expect(contexts.contains { if case .tracking = $0 { true } else { false } })
        #expect(contexts.contains { if case .task = $0 { true } else { false } })
        for entry in Self.catalogue {
            #expect(entry.allowed.contains { $0.verdict == .ok }, "\(entry)")
            #expect(entry.allowed.allSatisfy { [.ok, .notFound].contains($0.verdict) }, "\(entry)")
            #expect(entry.refused.contains { $0.verdict == .role }, "\(entry)")
            #expect(entry.refused.contains { $0.verdict == .claim } == !entry.type.isWholeFleet, "\(entry)")
        }
    }

    /// Each backend's token of each type is accepted for the calls it is meant for and refused the neighbouring
    /// ones; the same token is refused (role) in another tenant's project; and all of them, an hour and more later,
    /// are refused as expired. The backends run side by side, each in its own project.
    @Test func everyBackendsTokensAreAcceptedWhereMeantAndRefusedNextDoor() async throws {
        let contexts = try Self.catalogue.map { try $0.context }
        try await CatalogueWorld.with(contexts: contexts) { world in
            try await Self.grantRolesAndSeed(world.fleetEngine)
            let replays = try await withThrowingTaskGroup(of: [Replay].self) { group in
                for backend in CatalogueBackend.allCases { group.addTask { try await Self.useEveryToken(of: backend, in: world) } }
                return try await group.reduce(into: [Replay]()) { $0 += $1 }
            }
            // An hour and more later, as Fleet Engine's clock sees it: every token is refused, none by role or claim.
            try await world.fleetEngine.control(["clockOffsetSec": 3_700])
            for replay in replays {
                try await Self.expect(
                    replay.call.expecting(.expired), with: replay.token, in: replay.project, at: world.fleetEngine, "\(replay.label), expired")
            }
            try await world.fleetEngine.control(["reset": ["clock"]])
            // The stand-in's own log agrees: it saw every call, and no other verdict than those expected.
            let counts = Self.catalogue.reduce(0) { $0 + $1.allowed.count + $1.refused.count + 2 } * CatalogueBackend.allCases.count
            let calls = try await world.fleetEngine.calls()
            #expect(calls.count == counts)
            let verdicts = Set(calls.compactMap { $0["verdict"]?.stringValue })
            #expect(verdicts == ["ok", "not_found", "claim", "role", "expired"], "\(verdicts)")
        }
    }

    /// A token to use again once it has expired, and the call to use it for.
    struct Replay: Sendable {
        var label: String
        var project: String
        var token: String
        var call: Call
    }

    /// Mints each entry's token from `backend`'s provider, checks that its type's account signed it, and makes
    /// every call of the entry in the provider's project, then the first allowed one in the next backend's project.
    static func useEveryToken(of backend: CatalogueBackend, in world: CatalogueWorld) async throws -> [Replay] {
        let backends = CatalogueBackend.allCases
        let otherProject = backends[(try #require(backends.firstIndex(of: backend)) + 1) % backends.count].provider
        var replays: [Replay] = []
        for entry in catalogue {
            let label = "\(backend) \(entry)"
            let token = try await world.mint(backend, entry.type, query: entry.query)
            let claims = JWTVerifier.decodeUnverified(token).claims
            #expect(claims?["iss"] == .string(backend.account(entry.type)), "\(label): signed by the account of its type")
            for call in entry.allowed + entry.refused {
                try await expect(call, with: token, in: backend.provider, at: world.fleetEngine, label)
            }
            // The account's role is granted in its own provider's project only.
            let first = try #require(entry.allowed.first)
            try await expect(first.expecting(.role), with: token, in: otherProject, at: world.fleetEngine, "\(label) in \(otherProject)")
            replays.append(Replay(label: label, project: backend.provider, token: token, call: first))
        }
        return replays
    }

    /// Grants each account its type's role in its provider's project, and seeds every project alike.
    static func grantRolesAndSeed(_ fleetEngine: FleetEngineStandIn) async throws {
        var roles = JSONObject()
        var resources: [String: JSONObject] = [:]
        for backend in CatalogueBackend.allCases {
            var grants = JSONObject()
            for type in TokenType.allCases { grants[backend.account(type)] = [.string(role(of: type))] }
            roles[backend.provider] = .object(grants)
            for (kind, items) in seed { resources[kind, default: [:]][backend.provider] = .object(items) }
        }
        var control: JSONObject = ["roles": .object(roles)]
        for (kind, projects) in resources { control[kind] = .object(projects) }
        try await fleetEngine.control(control)
    }

    /// Makes `call` with `token` in `project` and checks the status and the stand-in's verdict.
    static func expect(_ call: Call, with token: String, in project: String, at fleetEngine: FleetEngineStandIn, _ label: String) async throws {
        let answer = try await fleetEngine.call(call.method, project: project, call.path, token: token, body: call.body)
        let message = answer.body?["error"]?.objectValue?["message"]?.stringValue ?? ""
        #expect(
            answer.status == call.verdict.status && answer.verdict == call.verdict.rawValue,
            "\(label): \(call) answered \(answer.status) \(answer.verdict ?? "-") \(message), expected \(call.verdict.status) \(call.verdict.rawValue)"
        )
    }
}

/// The token route's query as the gateway reads it, for the table's own contexts.
enum QueryParameters {
    static func parse(_ query: String) -> [String: String] {
        var parameters: [String: String] = [:]
        for pair in query.split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            parameters[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
        }
        return parameters
    }
}
