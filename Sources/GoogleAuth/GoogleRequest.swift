import Foundation
import JOSE
import NIOSSL

/// One HTTP request to a Google endpoint, kept as plain values so each retry sends the same bytes.
struct GoogleRequest: Sendable {
    var method: String
    var url: String
    var headers: [(name: String, value: String)] = []
    var body: [UInt8]?
    /// For logs and errors: "the OAuth token endpoint https://oauth2.googleapis.com/token". Never a secret.
    var what: String
    /// Strings scrubbed from any error message built from the answer (a server may echo what it was sent).
    var secrets: [String] = []
    /// A TLS configuration of its own (a client certificate, for mutual TLS), else the client's.
    var tlsConfiguration: TLSConfiguration?

    /// A form-encoded POST (`application/x-www-form-urlencoded`).
    static func form(_ url: String, _ fields: [(String, String)], what: String, secrets: [String]) -> GoogleRequest {
        let body = fields.map { "\(formEncode($0.0))=\(formEncode($0.1))" }.joined(separator: "&")
        return GoogleRequest(
            method: "POST", url: url,
            headers: [("Content-Type", "application/x-www-form-urlencoded")],
            body: Array(body.utf8), what: what, secrets: secrets
        )
    }

    /// A JSON POST.
    static func json(_ url: String, _ object: JSONObject, what: String, secrets: [String]) -> GoogleRequest {
        GoogleRequest(
            method: "POST", url: url, headers: [("Content-Type", "application/json")],
            body: JSON.serialize(.object(object)), what: what, secrets: secrets
        )
    }

    /// RFC 3986 unreserved characters stay, everything else is %XX (stricter than form encoding needs, and
    /// unambiguous: `+` and `=` inside a JWT or token are escaped).
    static func formEncode(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var output: [UInt8] = []
        output.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                output.append(byte)
            default:
                output += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            }
        }
        return String(decoding: output, as: UTF8.self)
    }
}
