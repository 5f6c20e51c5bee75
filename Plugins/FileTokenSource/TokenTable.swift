import JOSE
import TokenGateCore
import YAML

/// A pre-issued token that passed verification when its file was loaded.
struct TokenEntry: Sendable {
    var compact: String
    var keyID: String?
    var expiresAt: Int64
}

/// One version of the token file: its verified tokens by context, and the entries that were refused.
struct TokenTable: Sendable {
    /// The largest token file accepted. Well above the 1 MiB default of `config.yaml`: batch setups list thousands.
    static let maxFileBytes = 32 << 20

    var tokens: [TokenContext: TokenEntry] = [:]
    var skipped: [SkippedToken] = []
    /// Why a file whose every token was skipped must not be taken: it would serve nothing, yet look loaded.
    var nothingVerified: String? {
        guard tokens.isEmpty, let first = skipped.first else { return nil }
        return "none of the \(skipped.count) tokens in the file can be served; the first, at \(first.location), was skipped: \(first.reason)"
    }

    /// The token types with at least one token in force; stored, as `issue` asks on every call.
    private(set) var tokenTypes: Set<TokenType> = []

    /// Parses `bytes` as the token file and verifies every token at `now`.
    ///
    /// A file of the wrong shape (unparseable, unknown token type, a token that is not a string) throws a located
    /// `ConfigError`: it is never half used. A token that fails verification, or is filed under an ID TokenGate
    /// refuses, is skipped and recorded with its reason.
    static func parse(
        _ bytes: [UInt8],
        file: ConfigFile,
        verifier: FleetEngineVerifier,
        now: Int64
    ) throws -> TokenTable {
        do {
            return try parseUnredacted(bytes, file: file, verifier: verifier, now: now)
        } catch let error as ConfigError {
            // A token pasted where a key belongs would otherwise reach logs through a key path or a message.
            throw ConfigError(file: error.file, mark: error.mark, keyPath: redacted(error.keyPath), message: redacted(error.message))
        }
    }

    /// `text` with every run of more than 64 base64url characters (a JWS part, never a context ID) replaced by `…`.
    static func redacted(_ text: String) -> String {
        var output = ""
        var run = ""
        func flush() {
            output += run.utf8.count > ContextID.maxLength ? "…" : run
            run = ""
        }
        for character in text {
            if character.isASCII, character.isLetter || character.isNumber || character == "-" || character == "_" {
                run.append(character)
            } else {
                flush()
                output.append(character)
            }
        }
        flush()
        return output
    }

    private static func parseUnredacted(
        _ bytes: [UInt8],
        file: ConfigFile,
        verifier: FleetEngineVerifier,
        now: Int64
    ) throws -> TokenTable {
        var parser = YAMLParser()
        parser.maxBytes = maxFileBytes
        let root: YAMLNode?
        do {
            root = try parser.parse(bytes)
        } catch {
            throw ConfigError(file: file.displayPath, mark: error.mark, keyPath: "", message: error.message)
        }
        guard let root else {
            throw ConfigError(file: file.displayPath, mark: nil, keyPath: "", message: "the file is empty")
        }
        var builder = Builder(verifier: verifier, now: now)
        for (typeName, typeNode) in try ConfigNode(root: root, file: file).entries() {
            guard let type = TokenType(rawValue: typeName) else {
                let expected = TokenType.allCases.map(\.rawValue).joined(separator: ", ")
                throw typeNode.keyError("unknown token type; expected one of: \(expected)")
            }
            switch type {
            case .server, .fleetReader, .deliveryFleetReader:
                // A whole fleet has no ID: the one wildcard token is the value itself.
                try builder.add(typeNode, context: try TokenContext.parse(type: type, parameters: [:]))
            case .trustedDeliveryDriver:
                // vehicle → task (or `*`) → token.
                for (rawVehicle, tasksNode) in try typeNode.entries() {
                    for (rawTask, tokenNode) in try tasksNode.entries() {
                        try builder.add(tokenNode, type: type, parameters: ["deliveryVehicleId": rawVehicle, "taskId": rawTask])
                    }
                }
            case .batchTasks:
                // `t1,t2` → token.
                for (rawTasks, tokenNode) in try typeNode.entries() {
                    try builder.add(tokenNode, type: type, parameters: ["taskIds": rawTasks])
                }
            case .deliveryConsumer:
                let kinds = try typeNode.mapping(allowedKeys: ["tracking", "task"])
                for (kind, kindNode) in kinds.children {
                    try builder.addAll(kindNode, as: kind == "tracking" ? TokenContext.tracking : TokenContext.task)
                }
            case .consumer: try builder.addAll(typeNode, as: TokenContext.trip)
            case .driver: try builder.addAll(typeNode, as: TokenContext.vehicle)
            case .deliveryDriver: try builder.addAll(typeNode, as: TokenContext.deliveryVehicle)
            }
        }
        var table = builder.table
        table.tokenTypes = Set(table.tokens.keys.map(\.tokenType))
        return table
    }
}

/// Fills a table entry by entry; verification failures become skipped entries, shape errors throw.
private struct Builder {
    let verifier: FleetEngineVerifier
    let now: Int64
    var table = TokenTable()

    /// `node` maps context IDs to tokens.
    mutating func addAll(_ node: ConfigNode, as makeContext: (ContextID) -> TokenContext) throws {
        for (rawID, tokenNode) in try node.entries() {
            let id: ContextID
            do {
                id = try ContextID(validating: rawID)
            } catch {
                // Fleet Engine's rule, the one TokenGate checks every ID against; the key path locates the entry.
                skip(tokenNode, SkipReason.invalidContext, "not a Fleet Engine ID: it \(error)")
                continue
            }
            try add(tokenNode, context: makeContext(id))
        }
    }

    /// `node` is the token filed under the context `parameters` name, skipped if they name none.
    mutating func add(_ node: ConfigNode, type: TokenType, parameters: [String: String]) throws {
        do {
            try add(node, context: try TokenContext.parse(type: type, parameters: parameters))
        } catch let error as ContextError {
            skip(node, SkipReason.invalidContext, "not a \(type) context: \(error)")
        }
    }

    /// `node` is the compact token filed under `context`.
    mutating func add(_ node: ConfigNode, context: TokenContext) throws {
        // Read the scalar as written: a token never needs `${NAME}`, and interpolating one could leak it in an error.
        let compact = try node.scalar().value
        guard !compact.isEmpty else { throw node.error("expected a token (a compact JWS), got nothing") }
        do {
            let verified = try verifier.verify(compact, for: context, now: now)
            guard let expiresAt = verified.expiresAt else {
                skip(node, SkipReason.missingClaim, "the token has no exp")
                return
            }
            table.tokens[context] = TokenEntry(compact: compact, keyID: verified.keyID, expiresAt: expiresAt)
        } catch let rejection where rejection.reason == .insufficientLifetime {
            // Past `exp` but inside the verifier's leeway: to an operator that is simply expired.
            skip(node, SkipReason.expired, "the token has expired")
        } catch {
            skip(node, error.reason, error.message)
        }
    }

    private mutating func skip(_ node: ConfigNode, _ reason: TokenRejection.Reason, _ message: String) {
        let location = "\(node.file.displayPath):\(node.mark)"
        // The key path holds the entry's IDs, which may hold any character Fleet Engine allows: escaped for the log.
        let keyPath = TokenTable.redacted(ContextID.escaped(node.keyPath))
        table.skipped.append(SkippedToken(location: location, keyPath: keyPath, reason: reason, message: TokenTable.redacted(message)))
    }
}

/// Reason codes for entries the verifier never saw or whose code would mislead an operator.
private enum SkipReason {
    /// The file names an ID that breaks Fleet Engine's rule (or is `*`).
    static let invalidContext = TokenRejection.Reason("invalid_context")
    /// The token's `exp` has passed (JOSE's own code, also used when the verifier's leeway would still accept it).
    static let expired = TokenRejection.Reason("expired")
    /// The token has no `exp` (the verifier requires one, so this is a backstop).
    static let missingClaim = TokenRejection.Reason("missing_claim")
}
