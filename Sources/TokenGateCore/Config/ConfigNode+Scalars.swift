import Foundation
public import YAML

// Typed scalar accessors. Quoting matters: `port: "8080"` is a string and is refused where a number belongs.
extension ConfigNode {
    /// The scalar as written, or an error if this is a mapping or list.
    public func scalar() throws -> YAMLScalar {
        guard case .scalar(let scalar) = yaml.content else { throw error("expected a value, got \(kindName)") }
        return scalar
    }

    /// A string, with `${NAME}` replaced from the environment (an unset variable is an error).
    public func string() throws -> String {
        let scalar = try scalar()
        if scalar.isPlain, ["", "~", "null", "Null", "NULL"].contains(scalar.value) {
            throw error("expected a string, got nothing")
        }
        return try interpolate(scalar.value)
    }

    /// A non-empty string.
    public func nonEmptyString() throws -> String {
        let value = try string()
        guard !value.isEmpty else { throw error("must not be empty") }
        return value
    }

    /// An integer written without quotes.
    public func int() throws -> Int {
        let scalar = try scalar()
        guard scalar.isPlain, let value = Int(scalar.value) else {
            throw error("expected an integer, got \(scalar.isPlain ? "'\(scalar.value)'" : "the quoted string \"\(scalar.value)\"")")
        }
        return value
    }

    /// An integer in `range`.
    public func int(in range: ClosedRange<Int>) throws -> Int {
        let value = try int()
        guard range.contains(value) else { throw error("must be between \(range.lowerBound) and \(range.upperBound)") }
        return value
    }

    /// `true` or `false`, unquoted.
    public func bool() throws -> Bool {
        let scalar = try scalar()
        switch (scalar.isPlain, scalar.value) {
        case (true, "true"): return true
        case (true, "false"): return false
        default: throw error("expected true or false, got '\(scalar.value)'")
        }
    }

    /// A duration such as `90s`, `5m`, `1h` or `250ms`.
    public func duration() throws -> Duration {
        let text = try string()
        guard let duration = ConfigDuration.parse(text) else {
            throw error("expected a duration such as 90s, 5m or 1h, got '\(text)'")
        }
        return duration
    }

    /// A moment as epoch seconds: a date (`2027-01-15`, its midnight UTC) or a UTC time (`2027-01-15T10:23:00Z`).
    public func date() throws -> Int64 {
        let text = try string()
        guard let seconds = RFC3339.parse(text) else {
            throw error("expected a date such as 2027-01-15 or 2027-01-15T10:23:00Z (UTC), got '\(text)'")
        }
        return seconds
    }

    /// A list of strings.
    public func stringList() throws -> [String] {
        try sequence().map { try $0.nonEmptyString() }
    }

    /// A file path, resolved against the configuration file's directory.
    public func path() throws -> String {
        file.resolve(try nonEmptyString())
    }

    private func interpolate(_ text: String) throws -> String {
        guard text.contains("${") else { return text }
        var result = ""
        var rest = Substring(text)
        while let start = rest.range(of: "${") {
            result += rest[..<start.lowerBound]
            guard let end = rest[start.upperBound...].firstIndex(of: "}") else {
                throw error("unterminated ${ in value")
            }
            let name = String(rest[start.upperBound..<end])
            guard Self.isVariableName(name) else { throw error("'${\(name)}' is not a valid environment variable name") }
            guard let value = file.environment[name] else { throw error("environment variable \(name) is not set") }
            result += value
            rest = rest[rest.index(after: end)...]
        }
        return result + rest
    }

    private static func isVariableName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, first == "_" || (first.isASCII && first.properties.isAlphabetic)
        else { return false }
        return name.unicodeScalars.allSatisfy { $0 == "_" || ($0.isASCII && ($0.properties.isAlphabetic || ("0"..."9").contains($0))) }
    }
}

/// The duration notation of `config.yaml`: a whole number and a unit (`ms`, `s`, `m`, `h`).
public enum ConfigDuration {
    /// Parses `90s`, `5m`, `1h`, `250ms`; `nil` for anything else.
    public static func parse(_ text: String) -> Duration? {
        let digits = text.prefix { $0.isASCII && $0.isNumber }
        guard !digits.isEmpty, digits.count <= 9, let value = Int64(digits) else { return nil }
        switch text.dropFirst(digits.count) {
        case "ms": return .milliseconds(value)
        case "s": return .seconds(value)
        case "m": return .seconds(value * 60)
        case "h": return .seconds(value * 3600)
        default: return nil
        }
    }

    /// Whole seconds of `duration`, rounded down.
    public static func seconds(_ duration: Duration) -> Int64 { duration.components.seconds }
}
