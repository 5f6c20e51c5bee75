import Foundation
import OpenSSLPrimitives

/// AWS Signature Version 4, the header form (`AWS4-HMAC-SHA256`), for any AWS request; the digests and HMACs are
/// OpenSSL's. The steps are AWS's:
///
///     canonical request = METHOD \n canonical URI \n canonical query \n canonical headers \n signed headers \n
///                         hex(SHA-256(payload))
///     string to sign    = AWS4-HMAC-SHA256 \n amz date \n date/region/service/aws4_request \n
///                         hex(SHA-256(canonical request))
///     signing key       = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region), service), "aws4_request")
///     signature         = hex(HMAC(signing key, string to sign))
///
/// ```swift
/// let signed = try AWSSignatureV4.sign(
///     method: "GET", url: "https://example.amazonaws.com/", headers: [("host", "example.amazonaws.com"),
///     ("x-amz-date", "20150830T123600Z")], payload: [], credentials: credentials, region: "us-east-1",
///     service: "service", amzDate: "20150830T123600Z")
/// request.headers.add(name: "Authorization", value: signed.authorization)
/// ```
package enum AWSSignatureV4 {
    package static let algorithm = "AWS4-HMAC-SHA256"

    /// An AWS access key, with its session token when it is temporary. Only the key ID is ever shown.
    package struct Credentials: Sendable, CustomStringConvertible {
        package let accessKeyID: String
        /// A secret: never logged.
        package let secretAccessKey: String
        /// A secret: never logged.
        package let sessionToken: String?

        /// Credentials of `accessKeyID`.
        package init(accessKeyID: String, secretAccessKey: String, sessionToken: String?) {
            self.accessKeyID = accessKeyID
            self.secretAccessKey = secretAccessKey
            self.sessionToken = sessionToken
        }

        /// Nothing of the key: an access key ID is half of a credential.
        package var description: String { "AWSSignatureV4.Credentials(redacted)" }
    }

    /// A signed request's intermediate texts and its `Authorization` value.
    package struct Signed: Sendable {
        package let canonicalRequest: String
        package let stringToSign: String
        package let signature: String
        package let authorization: String
    }

    /// Signs `method url` with every header of `headers` (which must hold `host` and `x-amz-date`, as AWS's test
    /// suite's requests do) and `payload`, as of `amzDate` (`YYYYMMDDTHHMMSSZ`).
    package static func sign(
        method: String, url: String, headers: [(name: String, value: String)], payload: [UInt8], credentials: Credentials,
        region: String, service: String, amzDate: String
    ) throws(GoogleAuthError) -> Signed {
        guard let components = URLComponents(string: url) else {
            throw GoogleAuthError(.configuration, "the AWS request URL \(url) cannot be parsed")
        }
        let signedHeaders = Set(headers.map { $0.name.lowercased() }).sorted()
        let canonical = [
            method.uppercased(), canonicalURI(components.percentEncodedPath), canonicalQuery(components.percentEncodedQuery ?? ""),
            canonicalHeaders(headers, signedHeaders), signedHeaders.joined(separator: ";"), try hexSHA256(payload),
        ].joined(separator: "\n")
        let date = String(amzDate.prefix(8))
        let scope = "\(date)/\(region)/\(service)/aws4_request"
        let stringToSign = [algorithm, amzDate, scope, try hexSHA256(Array(canonical.utf8))].joined(separator: "\n")
        var key = Array("AWS4\(credentials.secretAccessKey)".utf8)
        for part in [date, region, service, "aws4_request"] { key = try hmac(key, part) }
        let signature = HexBytes.encode(try hmac(key, stringToSign))
        let authorization =
            "\(algorithm) Credential=\(credentials.accessKeyID)/\(scope), SignedHeaders=\(signedHeaders.joined(separator: ";")), "
            + "Signature=\(signature)"
        return Signed(canonicalRequest: canonical, stringToSign: stringToSign, signature: signature, authorization: authorization)
    }

    /// `YYYYMMDDTHHMMSSZ` in UTC, the `x-amz-date` of a request signed at `epochSeconds`.
    package static func amzDate(epochSeconds: Int64) -> String {
        let days = epochSeconds >= 0 ? epochSeconds / 86_400 : (epochSeconds - 86_399) / 86_400
        let seconds = epochSeconds - days * 86_400
        // Howard Hinnant's civil_from_days: the proleptic Gregorian date of a day count from 1970-01-01.
        let shifted = days + 719_468
        let era = (shifted >= 0 ? shifted : shifted - 146_096) / 146_097
        let dayOfEra = shifted - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let monthIndex = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * monthIndex + 2) / 5 + 1
        let month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        return "\(year)\(two(month))\(two(day))T\(two(seconds / 3600))\(two(seconds / 60 % 60))\(two(seconds % 60))Z"
    }

    /// The path with dot segments and repeated slashes removed (every service but S3), each segment URI-encoded
    /// once; `/` when empty.
    static func canonicalURI(_ path: String) -> String {
        let decoded = percentDecode(path)
        var segments: [ArraySlice<UInt8>] = []
        for segment in decoded.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: true) {
            if segment.elementsEqual(".".utf8) { continue }
            if segment.elementsEqual("..".utf8) {
                _ = segments.popLast()
                continue
            }
            segments.append(segment)
        }
        var uri = "/" + segments.map { uriEncode(Array($0)) }.joined(separator: "/")
        if decoded.last == UInt8(ascii: "/"), uri != "/" { uri += "/" }
        return uri
    }

    /// Each name and value decoded, then URI-encoded (`/` too), sorted by name then value, joined with `&`.
    static func canonicalQuery(_ query: String) -> String {
        var pairs: [(name: String, value: String)] = []
        for part in query.split(separator: "&", omittingEmptySubsequences: true) {
            let name = part.prefix { $0 != "=" }
            let value = part.dropFirst(name.count).dropFirst()
            pairs.append((uriEncode(percentDecode(String(name))), uriEncode(percentDecode(String(value)))))
        }
        pairs.sort { ($0.name, $0.value) < ($1.name, $1.value) }
        return pairs.map { "\($0.name)=\($0.value)" }.joined(separator: "&")
    }

    /// `name:value\n` per signed header: names lower-cased, values trimmed with inner runs of white space made one
    /// space, the values of a repeated header joined with `,` in the order given.
    static func canonicalHeaders(_ headers: [(name: String, value: String)], _ signed: [String]) -> String {
        var values: [String: [String]] = [:]
        for (name, value) in headers {
            let words = value.split(whereSeparator: \.isWhitespace)
            values[name.lowercased(), default: []].append(words.joined(separator: " "))
        }
        return signed.map { "\($0):\(values[$0, default: []].joined(separator: ","))\n" }.joined()
    }

    /// RFC 3986 encoding of UTF-8 with upper-case hex: only letters, digits and `-_.~` stay.
    static func uriEncode(_ bytes: [UInt8]) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var output: [UInt8] = []
        for byte in bytes {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."),
                UInt8(ascii: "~"):
                output.append(byte)
            default:
                output += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0xF)]]
            }
        }
        return String(decoding: output, as: UTF8.self)
    }

    /// `%XX` decoded (a malformed escape stays as it is); `+` stays `+`, as AWS reads a query.
    static func percentDecode(_ text: String) -> [UInt8] {
        let bytes = Array(text.utf8)
        var output: [UInt8] = []
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
                let high = HexBytes.digitValue(bytes[index + 1]), let low = HexBytes.digitValue(bytes[index + 2])
            {
                output.append(high << 4 | low)
                index += 3
            } else {
                output.append(bytes[index])
                index += 1
            }
        }
        return output
    }

    private static func hexSHA256(_ bytes: [UInt8]) throws(GoogleAuthError) -> String {
        do { return HexBytes.encode(try Digest.sha256(bytes)) } catch {
            throw GoogleAuthError(.configuration, "SHA-256 failed while signing the AWS request (\(error))")
        }
    }

    private static func hmac(_ key: [UInt8], _ message: String) throws(GoogleAuthError) -> [UInt8] {
        do { return try HMAC.sha256(key: key, Array(message.utf8)) } catch {
            throw GoogleAuthError(.configuration, "HMAC-SHA256 failed while signing the AWS request (\(error))")
        }
    }
}
