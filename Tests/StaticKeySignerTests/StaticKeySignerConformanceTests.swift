import Foundation
import JOSE
import ServiceLifecycle
import StaticKeySigner
import Synchronization
import Testing
import TokenBackendConformance
import TokenGateCore
import TokenGateTesting

/// The static-key signer meets the backend contract, and the contract check catches each way a backend can break
/// it (shown on the real signer wrapped so that it misbehaves in one way).
@Suite struct StaticKeySignerConformanceTests {
    static let section = """
        type: static-key
        tokenLifetime: { default: 1h, consumer: 15m }
        keys:
          consumer:
            - serviceAccountFile: consumer.json
          driver:
            - serviceAccountFile: driver.json
        """

    /// Two accounts' key files, generated once: RSA key generation is what these tests would spend their time on.
    static let keyFiles: [String: [UInt8]] = {
        do {
            return try ["consumer", "driver"].reduce(into: [:]) { files, type in
                let email = "fleet-\(type)@conformance-project.iam.gserviceaccount.com"
                files["\(type).json"] = try ServiceAccountKey.generate(projectID: "conformance-project", clientEmail: email).json()
            }
        } catch {
            fatalError("cannot generate a test key: \(error)")
        }
    }()

    /// The check of `factory`'s backend built from ``section``, in a fresh directory holding ``keyFiles``.
    static func conformance(_ factory: any TokenBackendFactory, in directory: TemporaryDirectory) throws -> BackendConformance {
        for (name, bytes) in keyFiles {
            let written = FileManager.default.createFile(
                atPath: "\(directory.path)/\(name)", contents: Data(bytes), attributes: [.posixPermissions: 0o600])
            try #require(written)
        }
        return BackendConformance(
            factory: factory, section: section, directory: directory.path,
            invalidSection: (yaml: section.replacingOccurrences(of: "consumer: 15m", with: "consumer: 2h"), key: "tokenLifetime.consumer"),
            endWithin: TestTiming.bound(.seconds(5)))
    }

    @Test func theStaticKeySignerMeetsTheContract() async throws {
        let directory = try TemporaryDirectory(prefix: "conformance")
        defer { directory.remove() }
        let violations = try await Self.conformance(StaticKeySignerFactory(), in: directory).violations()
        #expect(violations.isEmpty, "\(violations)")
    }

    @Test(arguments: Misbehaviour.allCases)
    func theCheckCatchesABackendThat(_ misbehaviour: Misbehaviour) async throws {
        let directory = try TemporaryDirectory(prefix: "conformance")
        defer { directory.remove() }
        let hang = Hang()
        defer { hang.release() }
        var conformance = try Self.conformance(MisbehavingFactory(misbehaviour: misbehaviour, hang: hang), in: directory)
        if misbehaviour == .failsWithAnotherError { conformance.failingSection = Self.section }
        let violations = await conformance.violations()
        #expect(violations.contains { $0.contains(misbehaviour.violation) }, "\(violations)")
    }
}

/// One way of breaking the contract, and the words of the violation the check reports for it.
enum Misbehaviour: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case declaresATypeItCannotIssue
    case signsForAnotherContext
    case misstatesItsKey
    case misstatesItsExpiry
    case ignoresNotAfter
    case hangsWhenCancelled
    case keepsItsBackgroundWorkRunning
    case failsWithAnotherError
    case acceptsABadSection
    case summarizesWithAToken

    var testDescription: String { rawValue }

    var violation: String {
        switch self {
        case .declaresATypeItCannotIssue: "issuing a delivery-driver token for"
        case .signsForAnotherContext: "does not verify with its own keys"
        case .misstatesItsKey: "the header names"
        case .misstatesItsExpiry: "; its exp is"
        case .ignoresNotAfter: "asked for with notAfter"
        case .hangsWhenCancelled: "a cancelled issue() was still running"
        case .keepsItsBackgroundWorkRunning: "background work was still running"
        case .failsWithAnotherError: "not a TokenGateError with a backend_* code"
        case .acceptsABadSection: "the invalid section loaded"
        case .summarizesWithAToken: "it says a secret"
        }
    }
}

/// Builds the real static-key signer, wrapped to misbehave one way.
struct MisbehavingFactory: TokenBackendFactory {
    let misbehaviour: Misbehaviour
    let hang: Hang
    var type: String { "static-key" }

    func makeBackend(_ context: BackendContext) async throws -> any TokenBackend {
        var context = context
        if misbehaviour == .acceptsABadSection {
            // Whatever section it is given, it builds the good one: nothing is refused.
            context.section = try ConfigNode.parse(Array(StaticKeySignerConformanceTests.section.utf8), file: context.section.file)
        }
        let signer = try await StaticKeySignerFactory().makeBackend(context)
        return MisbehavingBackend(signer: signer, misbehaviour: misbehaviour, hang: hang, lastToken: LastToken())
    }
}

/// The last token a misbehaving backend issued, for the summary that leaks it.
final class LastToken: Sendable {
    private let value = Mutex<String?>(nil)
    var token: String? { value.withLock { $0 } }
    func record(_ token: String) { value.withLock { $0 = token } }
}

struct MisbehavingBackend: TokenBackend {
    let signer: any TokenBackend
    let misbehaviour: Misbehaviour
    let hang: Hang
    let lastToken: LastToken

    var tokenTypes: Set<TokenType> {
        misbehaviour == .declaresATypeItCannotIssue ? signer.tokenTypes.union([.deliveryDriver]) : signer.tokenTypes
    }
    var verificationKeys: [BoundKeySource] { signer.verificationKeys }
    var tokenLifetimes: TokenLifetimes? { signer.tokenLifetimes }
    var summary: String { misbehaviour == .summarizesWithAToken ? "last: \(lastToken.token ?? "")" : signer.summary }
    var backgroundWork: (any Service)? { misbehaviour == .keepsItsBackgroundWorkRunning ? EndlessWork(hang: hang) : nil }

    func issue(_ request: TokenRequest) async throws -> IssuedToken {
        var request = request
        switch misbehaviour {
        case .signsForAnotherContext where request.context.id != nil:
            request.context = .vehicle(ContextID("someone-else")!)
        case .ignoresNotAfter:
            request.notAfter = nil
        case .hangsWhenCancelled where Task.isCancelled:
            await hang.untilReleased()
        case .failsWithAnotherError:
            throw CancellationError()
        default:
            break
        }
        if misbehaviour == .declaresATypeItCannotIssue, request.type == .deliveryDriver {
            throw TokenGateError(.backendError, "no delivery-driver key")
        }
        var token = try await signer.issue(request)
        lastToken.record(token.compact)
        if misbehaviour == .misstatesItsKey { token.keyID = "another-key" }
        if misbehaviour == .misstatesItsExpiry { token.expiresAt = token.expiresAt.map { $0 + 600 } }
        return token
    }
}

/// Background work that ignores cancellation until the test is over.
struct EndlessWork: Service {
    let hang: Hang
    func run() async throws { await hang.untilReleased() }
}

/// Holds a misbehaving call, cancelled or not (as a blocking call would), until the test releases it; a minute
/// at most, so nothing outlives a test run.
final class Hang: Sendable {
    private let released = Atomic(false)

    func release() { released.store(true, ordering: .releasing) }

    func untilReleased() async {
        // In a task of its own, which the caller's cancellation does not reach: in a cancelled task every sleep
        // returns at once, and the loop would spin on a thread of the shared pool.
        let waiting = Task {
            let limit = ContinuousClock.now + .seconds(60)
            while !self.released.load(ordering: .acquiring), ContinuousClock.now < limit { try? await Task.sleep(for: .milliseconds(20)) }
        }
        await waiting.value
    }
}
