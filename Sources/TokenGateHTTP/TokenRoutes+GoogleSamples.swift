import HTTPTypes
import Hummingbird
import JOSE
import NIOCore
import TokenGateCore

/// The routes Google's sample token servers answer, for providers with `compatibility: google-samples`: an app
/// built on those samples points its provider URL at `/v1/providers/{providerId}/samples` and works unchanged
/// (apart from sending its credential: TokenGate never vends anonymously).
///
/// | route | token | body |
/// |---|---|---|
/// | `/token/consumer/{tripId}` | consumer | `{"jwt", "creationTimestamp", "expirationTimestamp"}` (epoch ms) |
/// | `/token/driver/{vehicleId}` | driver | same |
/// | `/token/delivery_driver/{deliveryVehicleId}` | delivery-driver | `{"token", "creation_timestamp_ms", "expiration_timestamp_ms"}` |
/// | `/token/delivery_consumer/{trackingId}` | delivery-consumer | same |
/// | `/token/fleet_reader` | delivery-fleet-reader if the provider issues it (as the last-mile sample does), else fleet-reader | same |
///
/// Each goes through the same authentication, authorization, limits, cache and verification as the main route.
extension TokenRoutes {
    static let samplesPath = "/v1/providers/:providerId/samples/token/:sampleType"
    static let samplesContextPath = "/v1/providers/:providerId/samples/token/:sampleType/:contextId"

    /// The two body shapes the samples' apps parse.
    enum SampleShape {
        /// Google's on-demand (rides) samples: `jwt`, `creationTimestamp`, `expirationTimestamp`.
        case onDemand
        /// Google's last-mile delivery sample: `token`, `creation_timestamp_ms`, `expiration_timestamp_ms`.
        case lastMile

        func body(_ token: DeliveredToken) -> [UInt8] {
            let (tokenKey, createdKey, expiresKey) =
                switch self {
                case .onDemand: ("jwt", "creationTimestamp", "expirationTimestamp")
                case .lastMile: ("token", "creation_timestamp_ms", "expiration_timestamp_ms")
                }
            return JSON.serialize(
                .object([
                    tokenKey: .string(token.compact),
                    createdKey: .integer(token.issuedAt * 1000),
                    expiresKey: .integer(token.expiresAt * 1000),
                ]))
        }
    }

    func sampleToken(_ request: Request, _ context: TokenGateRequestContext) async -> Response {
        var shape = SampleShape.onDemand
        return await serve(request, context) { _ throws(TokenGateError) in
            let route = try resolveSampleRoute(context)
            shape = route.shape
            return (route.type.rawValue, route.parameters)
        } render: { grant in
            ByteBuffer(bytes: shape.body(grant.token))
        }
    }

    /// The token type, context and shape a sample route names; a provider that did not enable the routes answers
    /// them as the unknown paths they are for it.
    private func resolveSampleRoute(
        _ context: TokenGateRequestContext
    ) throws(TokenGateError) -> (type: TokenType, parameters: [String: String], shape: SampleShape) {
        guard let id = context.parameters.get("providerId").flatMap(ProviderID.init), let runtime = service.generation.providers[id] else {
            throw TokenGateError(.unknownProvider, "no provider with that ID")
        }
        guard runtime.settings.answersGoogleSampleRoutes else {
            throw TokenGateError(.notFound, "provider \(id) does not enable compatibility: google-samples")
        }
        let contextID = context.parameters.get("contextId")
        // The ID segment is percent-decoded as UTF-8, as a path is (a `+` is a plus); the token route then checks it
        // against Fleet Engine's rule like any other.
        func needsID(_ type: TokenType, _ field: ContextID.Field, _ shape: SampleShape) throws(TokenGateError)
            -> (type: TokenType, parameters: [String: String], shape: SampleShape)
        {
            guard let contextID else { throw TokenGateError(.invalidRequest, "this sample route needs an ID: /token/{type}/{id}") }
            guard let id = PercentDecoding.text(of: contextID[...], plusIsSpace: false) else {
                throw TokenGateError(refusing: ContextID.Refusal(field, .invalidUTF8))
            }
            return (type, [field.rawValue: id], shape)
        }
        switch context.parameters.get("sampleType") ?? "" {
        case "consumer": return try needsID(.consumer, .tripId, .onDemand)
        case "driver": return try needsID(.driver, .vehicleId, .onDemand)
        case "delivery_driver": return try needsID(.deliveryDriver, .deliveryVehicleId, .lastMile)
        case "delivery_consumer": return try needsID(.deliveryConsumer, .trackingId, .lastMile)
        case "fleet_reader":
            guard contextID == nil else { throw TokenGateError(.invalidRequest, "fleet_reader takes no ID") }
            let type: TokenType = runtime.backend.tokenTypes.contains(.deliveryFleetReader) ? .deliveryFleetReader : .fleetReader
            return (type, [:], .lastMile)
        default:
            throw TokenGateError(.unknownTokenType, "no such sample token type")
        }
    }
}
