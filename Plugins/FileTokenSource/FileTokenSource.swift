import JOSE
import Logging
import OpenSSLPrimitives
package import ServiceLifecycle
import Synchronization
package import TokenGateCore

/// A backend that hands out pre-issued tokens from a YAML or JSON file, for offline and batch setups.
///
/// Every token was verified when its file was loaded, with the provider's own verification policy, and the gateway
/// verifies it again before it hands it out, so an expired token is never served. The file is reloaded when its
/// content changes (see ``run()``); a version that cannot be read or parsed leaves the previous tokens in force and
/// is reported. The file format is described on ``FileTokenSourceFactory``.
///
/// - `issue(_:)` throws `unknown_token_type` when the file holds no token of the requested type, and
///   `no_token_for_context` (404, not worth retrying) when it holds none for the requested context, or only an
///   expired one.
/// - ``tokenTypes`` is the set of types with at least one token in force, read afresh on every call.
package final class FileTokenSource: TokenBackend, Service {
    /// The token file, resolved against the configuration's directory.
    package let path: String
    /// How often ``run()`` looks at the file.
    package let pollInterval: Duration
    /// Verifies each token at load; `minRemaining` 1 so a token is loaded only before its `exp`.
    let verifier: FleetEngineVerifier
    /// Where `verifier`'s keys came from, for the gateway's own check.
    package let verificationKeys: [BoundKeySource]
    let clock: TokenGateClock
    let logger: Logger

    struct State {
        /// The tokens in force.
        var table: TokenTable
        /// SHA-256 of the content `table` came from.
        var digest: [UInt8]
        /// SHA-256 of the content the previous look read, for the two-looks-in-a-row rule.
        var lastSeen: [UInt8]?
        /// The last failure reported, so a file that stays broken is reported once, not on every poll.
        var lastFailure: String?
        /// SHA-256 of the content that last failed to parse: the same bytes are not parsed again.
        var failedDigest: [UInt8]?
    }

    // `issue` takes this lock only to copy one entry; tables are built outside it and swapped in whole.
    private let state: Mutex<State>
    // Serialises reloads, so two concurrent ones cannot swap an older file in after a newer one. `issue` never
    // takes it.
    private let reloading = Mutex(())

    init(
        path: String,
        pollInterval: Duration,
        verifier: FleetEngineVerifier,
        verificationKeys: [BoundKeySource],
        clock: TokenGateClock,
        logger: Logger,
        initial: (table: TokenTable, digest: [UInt8])
    ) {
        self.path = path
        self.pollInterval = pollInterval
        self.verifier = verifier
        self.verificationKeys = verificationKeys
        self.clock = clock
        var logger = logger
        logger[metadataKey: "file"] = "\(path)"
        self.logger = logger
        self.state = Mutex(State(table: initial.table, digest: initial.digest, lastSeen: initial.digest))
        self.logger.info(
            "loaded pre-issued tokens",
            metadata: ["loaded": "\(initial.table.tokens.count)", "skipped": "\(initial.table.skipped.count)"]
        )
        report(initial.table)
    }

    package var tokenTypes: Set<TokenType> { state.withLock { $0.table.tokenTypes } }

    /// The number of tokens in force.
    package var tokenCount: Int { state.withLock { $0.table.tokens.count } }

    package func issue(_ request: TokenRequest) async throws -> IssuedToken {
        let context = request.context
        let (entry, hasType) = state.withLock { state in
            (state.table.tokens[context], state.table.tokenTypes.contains(context.tokenType))
        }
        guard let entry else {
            guard hasType else { throw TokenGateError(.unknownTokenType, "the token file holds no \(context.tokenType) tokens") }
            throw TokenGateError(.noTokenForContext, "no pre-issued token for \(context.tokenType) \(context)")
        }
        guard entry.expiresAt > clock.wallSeconds() else {
            throw TokenGateError(.noTokenForContext, "the pre-issued token for \(context.tokenType) \(context) has expired")
        }
        return IssuedToken(compact: entry.compact, keyID: entry.keyID, expiresAt: entry.expiresAt)
    }

    package var summary: String { "\(path): \(tokenCount) tokens, polled every \(pollInterval)" }

    /// The watcher of the token file (``run()``).
    package var backgroundWork: (any Service)? { self }

    /// Reads the file and, if its content differs from the loaded one, parses and verifies it and swaps it in.
    ///
    /// Reading, parsing and verifying happen outside the lock that `issue(_:)` takes; the new table replaces the
    /// old one only if the whole file parsed. A failure keeps the old tokens, is logged once, and is returned.
    package func reloadIfChanged() -> TokenFileReload {
        reload(requiringStableContent: false)
    }

    /// As ``reloadIfChanged()``; with `requiringStableContent`, new content is loaded only once two looks in a row
    /// read the same bytes (the first returns `.changing`), so a file caught mid-write is not loaded. ``run()``
    /// works this way.
    package func reload(requiringStableContent: Bool) -> TokenFileReload {
        reloading.withLock { _ in
            let bytes: [UInt8]
            let digest: [UInt8]
            do {
                bytes = try TokenFileReader.read(path, limit: TokenTable.maxFileBytes)
                digest = try Digest.sha256(bytes)
            } catch {
                return failed("\(error)")
            }
            let (loadedDigest, lastSeen, failedDigest, lastFailure) = state.withLock { state in
                defer { state.lastSeen = digest }
                return (state.digest, state.lastSeen, state.failedDigest, state.lastFailure)
            }
            if digest == loadedDigest {
                state.withLock { state in
                    state.lastFailure = nil
                    state.failedDigest = nil
                }
                return .unchanged
            }
            if requiringStableContent, digest != lastSeen { return .changing }
            if digest == failedDigest, let lastFailure { return .failed(reason: lastFailure) }
            return load(bytes, digest: digest)
        }
    }

    /// Parses and verifies `bytes` outside the state lock, then swaps the table in whole, or keeps the old one.
    private func load(_ bytes: [UInt8], digest: [UInt8]) -> TokenFileReload {
        let table: TokenTable
        do {
            let file = ConfigFile(path: path, environment: [:])
            table = try TokenTable.parse(bytes, file: file, verifier: verifier, now: clock.wallSeconds())
        } catch {
            return failed("\(error)", digest: digest)
        }
        if let problem = table.nothingVerified { return failed("\(path): \(problem)", digest: digest) }
        state.withLock { state in
            state.table = table
            state.digest = digest
            state.lastFailure = nil
            state.failedDigest = nil
        }
        logger.info(
            "reloaded pre-issued tokens",
            metadata: ["loaded": "\(table.tokens.count)", "skipped": "\(table.skipped.count)"]
        )
        report(table)
        return .reloaded(loaded: table.tokens.count, skipped: table.skipped)
    }

    private func failed(_ reason: String, digest: [UInt8]? = nil) -> TokenFileReload {
        let isNew = state.withLock { state in
            defer {
                state.lastFailure = reason
                state.failedDigest = digest
            }
            return state.lastFailure != reason
        }
        if isNew {
            logger.error("token file not loaded; the previous tokens stay in force", metadata: ["reason": "\(reason)"])
        }
        return .failed(reason: reason)
    }

    /// Logs every skipped token with its location and reason code; never the token.
    private func report(_ table: TokenTable) {
        for skipped in table.skipped {
            logger.warning(
                "skipped a pre-issued token",
                metadata: [
                    "location": "\(skipped.location)",
                    "entry": "\(skipped.keyPath)",
                    "reason": "\(skipped.reason)",
                    "detail": "\(skipped.message)",
                ]
            )
        }
    }
}
