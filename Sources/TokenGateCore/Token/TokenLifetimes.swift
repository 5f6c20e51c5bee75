import YAML

/// How long a minting backend's tokens live, per token type: `tokenLifetime` (one duration for every type, or one
/// per type with a `default`) and `wholeFleetTokenLifetime` (fleet readers and server tokens, which open a whole
/// fleet, so shorter by default).
///
/// ```yaml
/// tokenLifetime: { default: 1h, consumer: 15m }   # or tokenLifetime: 1h
/// wholeFleetTokenLifetime: 10m
/// ```
///
/// Every lifetime is 1m to 1h (Fleet Engine refuses longer ones); the whole-fleet one at most the default. A type
/// named in `tokenLifetime` gets exactly that lifetime, a whole-fleet one included.
public struct TokenLifetimes: Sendable, Equatable, CustomStringConvertible {
    /// Whole-fleet tokens' lifetime when `wholeFleetTokenLifetime` is not set: ten minutes.
    public static let defaultWholeFleet: Int64 = 600
    /// The keys of a backend section this type reads.
    public static let keys: Set<String> = ["tokenLifetime", "wholeFleetTokenLifetime"]

    /// Seconds, for every type not named otherwise.
    public private(set) var standard: Int64 = FleetEngineClaims.maxLifetime
    /// Seconds, for whole-fleet types not named in `tokenLifetime`.
    public private(set) var wholeFleet: Int64 = defaultWholeFleet
    /// Seconds, for the types `tokenLifetime` names.
    public private(set) var perType: [TokenType: Int64] = [:]

    /// One hour, ten minutes for whole-fleet types.
    public init() {}

    /// `exp - iat` of a `type` token, in seconds.
    public func seconds(for type: TokenType) -> Int64 {
        perType[type] ?? (type.isWholeFleet ? wholeFleet : standard)
    }

    /// `1h`, `1h (whole-fleet 10m)` or `1h (consumer 15m, whole-fleet 10m)`, for the types in `types`.
    public func describe(for types: Set<TokenType>) -> String {
        var details = perType.filter { types.contains($0.key) }.sorted { $0.key < $1.key }.map { "\($0.key.rawValue) \(Self.text($0.value))" }
        if types.contains(where: { $0.isWholeFleet && perType[$0] == nil }) { details.append("whole-fleet \(Self.text(wholeFleet))") }
        return Self.text(standard) + (details.isEmpty ? "" : " (\(details.joined(separator: ", ")))")
    }

    public var description: String { describe(for: Set(TokenType.allCases)) }

    /// Reads both keys of `section`, a backend that mints the types in `issuing` (the only ones `tokenLifetime` may
    /// name). Errors name the file, line and key.
    public static func parse(_ section: ConfigMapping, issuing: Set<TokenType>) throws -> TokenLifetimes {
        var lifetimes = TokenLifetimes()
        if let node = section.optional("tokenLifetime") {
            if case .mapping = node.yaml.content as YAMLNode.Content {
                for (key, child) in try node.entries() {
                    if key == "default" {
                        lifetimes.standard = try seconds(child)
                        continue
                    }
                    guard let type = TokenType(rawValue: key) else {
                        throw child.keyError("expected default or a token type: \(TokenType.allCases.map(\.rawValue).joined(separator: ", "))")
                    }
                    guard issuing.contains(type) else {
                        throw child.keyError(
                            "this backend issues no \(type) tokens; it issues \(issuing.sorted().map(\.rawValue).joined(separator: ", "))")
                    }
                    lifetimes.perType[type] = try seconds(child)
                }
            } else {
                lifetimes.standard = try seconds(node)
            }
        }
        if let node = section.optional("wholeFleetTokenLifetime") {
            lifetimes.wholeFleet = ConfigDuration.seconds(try node.duration())
            guard (60...lifetimes.standard).contains(lifetimes.wholeFleet) else {
                throw node.error("must be between 1m and tokenLifetime (\(text(lifetimes.standard)))")
            }
        } else {
            lifetimes.wholeFleet = min(defaultWholeFleet, lifetimes.standard)
        }
        return lifetimes
    }

    private static func seconds(_ node: ConfigNode) throws -> Int64 {
        let seconds = ConfigDuration.seconds(try node.duration())
        guard (60...FleetEngineClaims.maxLifetime).contains(seconds) else {
            throw node.error("must be between 1m and 1h: Fleet Engine rejects tokens that live longer than an hour")
        }
        return seconds
    }

    /// `1h`, `15m` or `90s`.
    static func text(_ seconds: Int64) -> String {
        seconds % 3600 == 0 ? "\(seconds / 3600)h" : seconds % 60 == 0 ? "\(seconds / 60)m" : "\(seconds)s"
    }
}
