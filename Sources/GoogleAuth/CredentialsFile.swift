import Foundation
import JOSE

/// A credentials JSON file read and parsed once, with field accessors whose errors name the file and the field.
struct CredentialsFile: Sendable {
    /// Credentials files are a few kilobytes; anything larger is not one (and is not read into memory whole).
    static let maximumBytes = 64 * 1024

    /// Where it was read from, as given.
    let path: String
    /// Its top-level object.
    let fields: CredentialFields

    /// Reads and parses `path`; a missing, oversized, unreadable or non-object file is a `.configuration` error.
    /// `what` names the kind of file in every error ("credentials file", "certificate configuration file").
    init(path: String, what: String = "credentials file") throws(GoogleAuthError) {
        self.path = path
        let bytes = try Self.read(path, what: what)
        let value: JSONValue
        do {
            value = try JSON.parse(bytes)
        } catch {
            throw GoogleAuthError(.configuration, "\(what) \(path): not valid JSON (\(error))")
        }
        guard case .object(let object) = value else {
            throw GoogleAuthError(.configuration, "\(what) \(path): not a JSON object")
        }
        fields = CredentialFields(object, file: path, prefix: "", what: what)
    }

    /// Whether something is at `path` (gcloud's file is optional; a named file is not).
    static func exists(_ path: String) -> Bool { FileManager.default.fileExists(atPath: path) }

    /// The bytes of a small file, at most `limit`. `what` names it in errors ("credentials file",
    /// "subject token file").
    static func read(_ path: String, what: String, limit: Int = maximumBytes) throws(GoogleAuthError) -> [UInt8] {
        guard let handle = FileHandle(forReadingAtPath: path) else {
            let reason = FileManager.default.fileExists(atPath: path) ? "cannot be read" : "does not exist"
            throw GoogleAuthError(.configuration, "\(what) \(path) \(reason)")
        }
        defer { try? handle.close() }
        let data: Data?
        do {
            // One byte over the cap tells "exactly at the cap" from "larger".
            data = try handle.read(upToCount: limit + 1)
        } catch {
            throw GoogleAuthError(.configuration, "\(what) \(path) cannot be read (\(type(of: error)))")
        }
        let bytes = [UInt8](data ?? Data())
        guard bytes.count <= limit else {
            throw GoogleAuthError(.configuration, "\(what) \(path) is larger than \(limit) bytes")
        }
        return bytes
    }
}

/// One JSON object of a credentials file. `prefix` is its path inside the file ("source_credentials."), so an error
/// names the field as a reader finds it.
struct CredentialFields: Sendable {
    let object: JSONObject
    let file: String
    let prefix: String
    /// The kind of file, first in every error: "credentials file", "certificate configuration file".
    let what: String

    init(_ object: JSONObject, file: String, prefix: String, what: String = "credentials file") {
        self.object = object
        self.file = file
        self.prefix = prefix
        self.what = what
    }

    /// A `.configuration` error about `field`, naming the file. Values are never quoted: they may be secrets.
    func error(_ field: String, _ problem: String) -> GoogleAuthError {
        GoogleAuthError(.configuration, "\(what) \(file): \"\(prefix)\(field)\" \(problem)")
    }

    /// Whether `field` is present and not `null`.
    func has(_ field: String) -> Bool {
        switch object[field] {
        case nil, .null?: false
        default: true
        }
    }

    /// A required non-empty string.
    func string(_ field: String) throws(GoogleAuthError) -> String {
        guard let value = try optionalString(field) else { throw error(field, "is missing") }
        return value
    }

    /// A non-empty string if present; `null` counts as absent.
    func optionalString(_ field: String) throws(GoogleAuthError) -> String? {
        switch object[field] {
        case nil, .null?: return nil
        case .string(let value)?:
            guard !value.isEmpty else { throw error(field, "is empty") }
            return value
        default: throw error(field, "is not a string")
        }
    }

    /// A nested object if present.
    func optionalObject(_ field: String) throws(GoogleAuthError) -> CredentialFields? {
        switch object[field] {
        case nil, .null?: return nil
        case .object(let value)?: return CredentialFields(value, file: file, prefix: "\(prefix)\(field).", what: what)
        default: throw error(field, "is not an object")
        }
    }

    /// A required nested object.
    func object(_ field: String) throws(GoogleAuthError) -> CredentialFields {
        guard let value = try optionalObject(field) else { throw error(field, "is missing") }
        return value
    }

    /// An array of strings if present, else empty.
    func stringArray(_ field: String) throws(GoogleAuthError) -> [String] {
        switch object[field] {
        case nil, .null?: return []
        case .array(let values)?:
            var strings: [String] = []
            for value in values {
                guard let string = value.stringValue, !string.isEmpty else { throw error(field, "holds a non-string") }
                strings.append(string)
            }
            return strings
        default: throw error(field, "is not an array")
        }
    }

    /// An integer in `range` if present.
    func optionalInteger(_ field: String, in range: ClosedRange<Int64>) throws(GoogleAuthError) -> Int64? {
        switch object[field] {
        case nil, .null?: return nil
        case .integer(let value)? where range.contains(value): return value
        case .integer?: throw error(field, "is not between \(range.lowerBound) and \(range.upperBound)")
        default: throw error(field, "is not an integer")
        }
    }

    /// A string map (HTTP headers) if present, else empty.
    func stringMap(_ field: String) throws(GoogleAuthError) -> [(name: String, value: String)] {
        guard let nested = try optionalObject(field) else { return [] }
        var pairs: [(name: String, value: String)] = []
        for (name, value) in nested.object {
            guard let string = value.stringValue else { throw nested.error(name, "is not a string") }
            pairs.append((name, string))
        }
        return pairs
    }

    /// A URL field that must be `https://`, or `http://` to a loopback host.
    func url(_ field: String) throws(GoogleAuthError) -> String {
        let text = try string(field)
        if let problem = SafeURL.problem(text) { throw error(field, problem) }
        return text
    }

    /// An optional URL field, checked as `url(_:)`.
    func optionalURL(_ field: String) throws(GoogleAuthError) -> String? {
        guard has(field) else { return nil }
        return try url(field)
    }

    /// An optional URL of the AWS instance metadata service: what `url(_:)` allows, and plain `http://` to
    /// 169.254.169.254 or [fd00:ec2::254].
    func optionalAWSMetadataURL(_ field: String) throws(GoogleAuthError) -> String? {
        guard let text = try optionalString(field) else { return nil }
        if let problem = SafeURL.awsMetadataProblem(text) { throw error(field, problem) }
        return text
    }

    /// A boolean if present.
    func optionalBool(_ field: String) throws(GoogleAuthError) -> Bool? {
        switch object[field] {
        case nil, .null?: return nil
        case .bool(let value)?: return value
        default: throw error(field, "is not true or false")
        }
    }
}
