import Foundation
import JOSE

/// `credential_source.file` or `credential_source.url`: a subject token in a file (a Kubernetes projected token,
/// rewritten as it rotates) or at a URL, as text or as a JSON answer's field. Read at every fetch.
struct FileOrURLSource: SubjectTokenSource {
    enum Location: Sendable {
        case file(String)
        case url(String, headers: [(name: String, value: String)])
    }

    let location: Location
    /// `nil`: the whole text; else the JSON answer's field of this name (`subject_token_field_name`).
    let jsonField: String?
    let http: GoogleHTTP

    var summary: String {
        switch location {
        case .file(let path): "file \(path)"
        case .url(let url, _): "URL \(url)"
        }
    }

    var fetchAllowance: Duration { .zero }

    /// `fields` is the `credential_source` object, which holds `file` or `url`, not both.
    init(_ fields: CredentialFields, http: GoogleHTTP) throws(GoogleAuthError) {
        let file = try fields.optionalString("file")
        let url = try fields.optionalURL("url")
        switch (file, url) {
        case (let file?, nil): location = .file(file)
        case (nil, let url?): location = .url(url, headers: try fields.stringMap("headers"))
        case (.some, .some): throw fields.error("file", "and \"\(fields.prefix)url\" are both set; one source only")
        case (nil, nil): throw fields.error("file", "is missing (or \"url\")")
        }
        let format = try fields.optionalObject("format")
        switch try format?.optionalString("type") ?? "text" {
        case "text": jsonField = nil
        case "json":
            guard let format else { throw fields.error("format", "is missing") }
            jsonField = try format.string("subject_token_field_name")
        default:
            throw (format ?? fields).error("type", "is neither \"text\" nor \"json\"")
        }
        self.http = http
    }

    func subjectToken(deadline: ContinuousClock.Instant) async throws(GoogleAuthError) -> SubjectToken {
        let bytes: [UInt8]
        switch location {
        case .file(let path):
            bytes = try CredentialsFile.read(path, what: "subject token file")
        case .url(let url, let headers):
            let request = GoogleRequest(method: "GET", url: url, headers: headers, what: "the subject token URL \(url)")
            bytes = try await http.send(request, deadline: deadline).body
        }
        let token: String?
        if let jsonField {
            guard let value = try? JSON.parse(bytes), case .object(let object) = value else {
                throw GoogleAuthError(.malformedAnswer, "the subject token \(summary) is not a JSON object")
            }
            token = object[jsonField]?.stringValue
        } else {
            token = String(validating: bytes, as: UTF8.self)
        }
        // Trimmed as Google's Go library does: a token file written with `echo` ends in a newline.
        guard let token = token?.trimmingCharacters(in: .whitespacesAndNewlines), !token.isEmpty else {
            throw GoogleAuthError(.malformedAnswer, "the subject token \(summary) is empty or unreadable")
        }
        return SubjectToken(value: token, provenance: "a subject token from \(summary)")
    }
}
