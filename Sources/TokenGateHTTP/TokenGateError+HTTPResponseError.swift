public import Hummingbird
import JOSE
public import TokenGateCore

// The one place where TokenGate's error codes become HTTP status codes.
extension TokenGateError: HTTPResponseError {
    public var status: HTTPResponse.Status {
        switch code {
        case .invalidRequest: .badRequest
        case .unauthenticated: .unauthorized
        case .forbidden: .forbidden
        case .unknownProvider, .unknownTokenType: .notFound
        case .rateLimited: .tooManyRequests
        case .backendInvalidToken, .backendError: .badGateway
        case .backendUnavailable: .serviceUnavailable
        case .backendTimeout: .gatewayTimeout
        default: .internalServerError
        }
    }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        var headers: HTTPFields = [.contentType: "application/json", .cacheControl: "no-store"]
        if code == .unauthenticated { headers[.wwwAuthenticate] = #"Bearer realm="tokengate""# }
        if let retryAfterSeconds { headers[.retryAfter] = String(retryAfterSeconds) }
        return Response(status: status, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// `{"error":{"code":"…","message":"…"}}`. Server faults get a generic message: reasons are for the log.
    var body: [UInt8] {
        let message: String
        switch code {
        case .backendInvalidToken: message = "the backend produced a token that failed verification"
        case .backendError, .internalError: message = "the token backend failed"
        default: message = reason
        }
        var error = JSONObject()
        error["code"] = .string(code.rawValue)
        error["message"] = .string(message)
        return JSON.serialize(.object(JSONObject(["error": .object(error)])))
    }
}
