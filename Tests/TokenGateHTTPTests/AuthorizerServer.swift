import Hummingbird
import Logging
import NIOCore
import Synchronization

/// A tenant's authorizer for tests: a real Hummingbird server on 127.0.0.1 and an ephemeral port that answers
/// `GET /can-access` as its script says, and records every question as it arrives (before any delay).
final class AuthorizerServer: Sendable {
    /// What the server does with one question.
    indirect enum Answer: Sendable {
        /// `200 {"allowed": true}`
        case allowed
        /// `200 {"allowed": true, "until": <epoch seconds>}`: yes, for a token no later than that.
        case allowedUntil(Int64)
        /// `200 {"allowed": false}`
        case denied
        /// This status with this body.
        case status(Int, body: String = "")
        /// Waits, then answers (a server slower than the gateway's timeout).
        case after(Duration, Answer)
    }

    /// A question as received: the raw (still percent-encoded) query, and its decoded parameters.
    struct Question: Sendable {
        var query: String
        var parameters: [String: String]
    }

    private let script: Mutex<@Sendable (Question) -> Answer>
    private let questions = Mutex<[Question]>([])

    private init(script: @escaping @Sendable (Question) -> Answer) {
        self.script = Mutex(script)
    }

    /// The questions received so far.
    var received: [Question] { questions.withLock { $0 } }
    /// How many questions arrived.
    var calls: Int { questions.withLock { $0.count } }

    /// Answers every later question with `answer`.
    func answer(_ answer: Answer) { script.withLock { $0 = { _ in answer } } }

    /// Answers every later question as `script` decides.
    func answer(by script: @escaping @Sendable (Question) -> Answer) { self.script.withLock { $0 = script } }

    /// Runs `body` with a server answering `initial`, listening at the `http://127.0.0.1:PORT` it is given; stops it
    /// afterwards, whatever happens.
    static func with<Result: Sendable>(
        answering initial: Answer = .allowed, _ body: (AuthorizerServer, String) async throws -> Result
    ) async throws -> Result {
        let server = AuthorizerServer { _ in initial }
        let router = Router()
        router.get("can-access") { request, _ -> Response in
            var parameters: [String: String] = [:]
            for (name, value) in request.uri.queryParameters { parameters[String(name)] = String(value) }
            let question = Question(query: request.uri.query ?? "", parameters: parameters)
            server.questions.withLock { $0.append(question) }
            return try await server.respond(server.script.withLock { $0 }(question))
        }
        return try await LoopbackHTTPServer.run(router, name: "authorizer-test") { url in try await body(server, url) }
    }

    private func respond(_ answer: Answer) async throws -> Response {
        switch answer {
        case .allowed:
            return Self.json(200, #"{"allowed": true}"#)
        case .allowedUntil(let until):
            return Self.json(200, #"{"allowed": true, "until": \#(until)}"#)
        case .denied:
            return Self.json(200, #"{"allowed": false}"#)
        case .status(let status, let body):
            return Self.json(status, body)
        case .after(let delay, let answer):
            try await Task.sleep(for: delay)
            return try await respond(answer)
        }
    }

    private static func json(_ status: Int, _ body: String) -> Response {
        Response(
            status: HTTPResponse.Status(code: status), headers: [.contentType: "application/json"],
            body: ResponseBody(byteBuffer: ByteBuffer(string: body)))
    }
}
