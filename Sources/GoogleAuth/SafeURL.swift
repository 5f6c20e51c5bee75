import Foundation

/// The URLs credentials may be sent to: `https://` anywhere, plain `http://` only to this machine (tests, local
/// emulators), so a tampered credentials file cannot send a refresh token or assertion across a network in clear.
/// The metadata server is the one exception, and is not checked here: it is plain HTTP by Google's design.
enum SafeURL {
    /// Why `text` may not be used, or `nil` if it may.
    static func problem(_ text: String) -> String? {
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased(),
            let host = components.host, !host.isEmpty
        else { return "is not an absolute URL" }
        guard components.user == nil, components.password == nil else { return "must not hold credentials" }
        switch scheme {
        case "https": return nil
        case "http" where isLoopback(host): return nil
        case "http": return "is plain http:// to a host other than this machine (use https://)"
        default: return "is not an https:// URL"
        }
    }

    /// 127.0.0.0/8, ::1 and localhost.
    static func isLoopback(_ host: String) -> Bool {
        var host = host.lowercased()
        if host.hasPrefix("["), host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        if host == "localhost" || host == "::1" || host == "0:0:0:0:0:0:0:1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        guard octets.count == 4, octets[0] == "127" else { return false }
        return octets.allSatisfy { octet in
            !octet.isEmpty && octet.count <= 3 && octet.allSatisfy(\.isASCII) && octet.allSatisfy(\.isNumber)
                && (UInt16(octet) ?? 256) <= 255
        }
    }

    /// A metadata host as `GCE_METADATA_HOST` gives it: `host[:port]`, nothing else.
    static func isPlausibleHost(_ text: String) -> Bool {
        guard !text.isEmpty, text.count <= 255 else { return false }
        return text.unicodeScalars.allSatisfy { scalar in
            scalar.isASCII && (CharacterSet.alphanumerics.contains(scalar) || ".-:[]".unicodeScalars.contains(scalar))
        }
    }
}
