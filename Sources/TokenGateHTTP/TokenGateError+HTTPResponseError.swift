import HTTPTypes
public import Hummingbird
import JOSE
import NIOCore
package import TokenGateCore

// The one place where TokenGate's error codes become HTTP status codes.
extension TokenGateError: HTTPResponseError {
    package var status: HTTPResponse.Status {
        switch code {
        case .invalidRequest, .badRequest: .badRequest
        case .requestHeaderFieldsTooLarge: .requestHeaderFieldsTooLarge
        case .unauthenticated: .unauthorized
        case .forbidden, .originNotAllowed: .forbidden
        case .unknownProvider, .unknownTokenType, .noTokenForContext, .notFound: .notFound
        case .methodNotAllowed: .methodNotAllowed
        case .rateLimited: .tooManyRequests
        case .contextEnded: .gone
        case .backendInvalidToken, .backendError: .badGateway
        case .backendUnavailable, .authorizerUnavailable, .sharedStateUnavailable: .serviceUnavailable
        case .endedListFull: HTTPResponse.Status(code: 507, reasonPhrase: "Insufficient Storage")
        case .backendTimeout: .gatewayTimeout
        default: .internalServerError
        }
    }

    package func response(from request: Request, context: some RequestContext) throws -> Response {
        response()
    }

    /// The answer (``TokenAnswer``): the JSON body, `Cache-Control: no-store`, the code's own headers
    /// (`WWW-Authenticate`, `Retry-After`), then `extra`.
    func response(adding extra: HTTPFields? = nil) -> Response {
        TokenAnswer(self).response(adding: extra)
    }

    /// The answer's body. Fixed per code, and per refusal of an ID, so made once: a denial copies a buffer
    /// reference, nothing else.
    var bodyBuffer: ByteBuffer {
        if let refusedID { return Self.refusalBodies[refusedID] ?? ByteBuffer(bytes: body) }
        return Self.bodies[code] ?? ByteBuffer(bytes: body)
    }

    /// `{"error":{"code":"…","message":"…"}}` with the fixed message (``publicMessage``): the reason is for the log
    /// only.
    var body: [UInt8] { Self.body(code: code, message: publicMessage) }

    private static let bodies: [Code: ByteBuffer] = Dictionary(
        uniqueKeysWithValues: Code.allCases.map { ($0, ByteBuffer(bytes: body(code: $0, message: $0.publicMessage))) })

    private static let refusalBodies: [ContextID.Refusal: ByteBuffer] = Dictionary(
        uniqueKeysWithValues: ContextID.Refusal.allCases.map {
            ($0, ByteBuffer(bytes: body(code: .invalidRequest, message: $0.description)))
        })

    /// The error body of `code` with `message`.
    static func body(code: Code, message: String) -> [UInt8] {
        var error = JSONObject()
        error["code"] = .string(code.rawValue)
        error["message"] = .string(message)
        return JSON.serialize(.object(JSONObject(["error": .object(error)])))
    }
}
