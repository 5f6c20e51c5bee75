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
        case .unknownProvider, .unknownTokenType, .noTokenForContext: .notFound
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

    /// `{"error":{"code":"…","message":"…"}}` with the code's fixed message: the reason is for the log only.
    var body: [UInt8] {
        var error = JSONObject()
        error["code"] = .string(code.rawValue)
        error["message"] = .string(code.publicMessage)
        return JSON.serialize(.object(JSONObject(["error": .object(error)])))
    }
}
