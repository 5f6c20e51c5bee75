internal import Foundation
public import JOSE

/// A file that Fuzz/make-seeds.py wrote next to the seed corpora: `$TOKENGATE_FUZZ_FIXTURES/<name>`.
///
/// A harness that needs one and cannot read it stops at once: fuzzing without its keys would accept nothing and
/// so find nothing, which must not pass for a clean run.
public enum Fixture {
    /// The environment variable that names the fixture folder (scripts/fuzz sets it).
    public static let environmentVariable = "TOKENGATE_FUZZ_FIXTURES"

    /// The fixture `name` as a JSON object.
    public static func object(_ name: String) -> JSONObject {
        guard let folder = ProcessInfo.processInfo.environment[environmentVariable], !folder.isEmpty else {
            fatalError("\(environmentVariable) is not set: run this harness through scripts/fuzz")
        }
        let path = "\(folder)/\(name)"
        guard let data = FileManager.default.contents(atPath: path) else { fatalError("cannot read fixture \(path)") }
        guard case .object(let object)? = try? JSON.parse([UInt8](data)) else {
            fatalError("fixture \(path) is not a JSON object")
        }
        return object
    }
}

extension JSONObject {
    /// The member `name`, which the fixture must have, as JSON bytes.
    public func fixtureBytes(_ name: String) -> [UInt8] {
        guard let value = self[name] else { fatalError("the fixture has no \"\(name)\"") }
        return JSON.serialize(value)
    }

    /// The string member `name`, which the fixture must have.
    public func fixtureString(_ name: String) -> String {
        guard case .string(let value)? = self[name] else { fatalError("the fixture has no string \"\(name)\"") }
        return value
    }

    /// The integer member `name`, which the fixture must have.
    public func fixtureInteger(_ name: String) -> Int64 {
        guard case .integer(let value)? = self[name] else { fatalError("the fixture has no integer \"\(name)\"") }
        return value
    }

    /// The array-of-strings member `name`, which the fixture must have.
    public func fixtureStrings(_ name: String) -> [String] {
        guard case .array(let values)? = self[name] else { fatalError("the fixture has no array \"\(name)\"") }
        return values.map {
            guard case .string(let value) = $0 else { fatalError("\"\(name)\" holds a non-string") }
            return value
        }
    }
}
