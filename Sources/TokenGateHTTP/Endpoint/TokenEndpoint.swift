import NIOCore
import TokenGateCore

/// The token endpoint, `GET /v1/providers/{providerId}/tokens/{tokenType}?{context}` and Google's sample routes:
/// one answer to a token request, whichever door it came by.
///
/// The router's door (``TokenRoutes``) asks ``answer(target:providerID:tokenTypeName:fields:requestID:peer:resolve:body:)``
/// and waits. The event loop's (``EventLoopTokenHandler``) asks ``answer(_:fields:peer:body:)``, which answers at
/// once what the service decides synchronously (a cached token, a refusal), passes on what the router must shape (a
/// browser's request, a `Connection: close`), and admits the rest for ``finish(_:)``, the rest of the router's path.
/// Both build one ``TokenQuery`` and one ``TokenAnswer``: the same status, fields in the same order, and body.
struct TokenEndpoint: Sendable {
    let service: TokenService
    let limits: RequestLimits
    let clock: TokenGateClock

    /// What the event loop's door gets: the answer for the request `requestID`; an admission only ``finish(_:)``
    /// can answer (no limit charged yet); or the router's request (nothing counted or charged).
    enum Outcome {
        case answer(TokenAnswer, requestID: String)
        case later(TokenAdmission)
        case notMine
    }

    /// The event loop's door: the answer to a GET of `target` (no body) with `fields` from `peer`, if it needs no
    /// wait. A token's body is written into `body`, the connection's buffer.
    func answer(_ target: TokenRouteTarget, fields: RequestFields, peer: PeerAddress?, body: inout ByteBuffer) -> Outcome {
        // Hummingbird closes the connection after such an answer; browsers' requests need CORS headers.
        guard !fields.closesConnection, !fields.hasOrigin else { return .notMine }
        let requestID = fields.chooseRequestID()
        let query: TokenQuery
        do throws(TokenGateError) {
            query = try self.query(
                target: target.target, authorization: fields.authorization, providerID: target.providerID, tokenTypeName: target.tokenType,
                peer: peer, requestID: requestID
            ) { () throws(TokenGateError) in
                (target.tokenType, try QueryParameters.parse(target.query, limits: limits))
            }
        } catch {
            return .answer(TokenAnswer(error), requestID: requestID)
        }
        switch service.cachedToken(for: query) {
        case .granted(let grant):
            TokenResponse.write(grant, now: clock.wallSeconds(), into: &body)
            return .answer(TokenAnswer(grant, body: body), requestID: requestID)
        case .refused(let error):
            return .answer(TokenAnswer(error), requestID: requestID)
        case .needsFullPath(let admission):
            return .later(admission)
        }
    }

    /// The answer to `admission` by the service's full path.
    func finish(_ admission: TokenAdmission) async -> TokenAnswer {
        do throws(TokenGateError) {
            let grant = try await service.token(for: admission)
            return TokenAnswer(grant, body: tokenBody(grant))
        } catch {
            return TokenAnswer(error)
        }
    }

    /// ``finish(_:)`` without a task, when the only wait is the shared limits' check for a cached token (see
    /// ``TokenService/token(afterSharedLimits:completion:)``): `completion` gets the answer once. False when only
    /// ``finish(_:)`` can answer.
    func finish(_ admission: TokenAdmission, completion: @escaping @Sendable (TokenAnswer) -> Void) -> Bool {
        service.token(afterSharedLimits: admission) { [self] result in
            switch result {
            case .success(let grant): completion(TokenAnswer(grant, body: tokenBody(grant)))
            case .failure(let error): completion(TokenAnswer(error))
            }
        }
    }

    /// The router's door: the answer to `target` (path and query), routed to `providerID`'s token or sample route
    /// for `tokenTypeName` (a refusal is counted under it). `resolve` names the token type and parameters, `body`
    /// renders a token.
    func answer(
        target: String, providerID: String, tokenTypeName: String, fields: RequestFields, requestID: String, peer: PeerAddress?,
        resolve: () throws(TokenGateError) -> (tokenType: String, parameters: [String: String]), body: (TokenGrant) -> ByteBuffer
    ) async -> TokenAnswer {
        do throws(TokenGateError) {
            let query = try self.query(
                target: target, authorization: fields.authorization, providerID: providerID, tokenTypeName: tokenTypeName, peer: peer,
                requestID: requestID, resolve: resolve)
            let grant = try await service.token(for: query)
            return TokenAnswer(grant, body: body(grant))
        } catch {
            return TokenAnswer(error)
        }
    }

    /// The token route's body for `grant`, now.
    func tokenBody(_ grant: TokenGrant) -> ByteBuffer {
        TokenResponse.body(for: grant, now: clock.wallSeconds())
    }

    /// The service's query for `target`. First refuses what the HTTP face checks itself (an oversized URL or
    /// `Authorization`, then what `resolve` refuses), counted and logged with the service's denials.
    private func query(
        target: String, authorization: String?, providerID: String, tokenTypeName: String, peer: PeerAddress?, requestID: String,
        resolve: () throws(TokenGateError) -> (tokenType: String, parameters: [String: String])
    ) throws(TokenGateError) -> TokenQuery {
        do throws(TokenGateError) {
            guard target.utf8.count <= limits.maxTargetBytes else {
                throw TokenGateError(.invalidRequest, "the request URL is longer than \(limits.maxTargetBytes) bytes")
            }
            if let authorization, authorization.utf8.count > limits.maxAuthorizationBytes {
                throw TokenGateError(.invalidRequest, "the Authorization header is longer than \(limits.maxAuthorizationBytes) bytes")
            }
            let (tokenType, parameters) = try resolve()
            return TokenQuery(
                providerID: providerID, tokenType: tokenType, parameters: parameters, authorization: authorization, peer: peer,
                requestID: requestID)
        } catch {
            service.recordDenial(error, providerID: providerID, tokenType: tokenTypeName, peer: peer, requestID: requestID)
            throw error
        }
    }
}
