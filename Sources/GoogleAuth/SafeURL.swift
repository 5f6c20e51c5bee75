import Foundation

/// The URLs credentials may be sent to: `https://` anywhere, plain `http://` only to this machine (tests, local
/// emulators), so a tampered credentials file cannot send a refresh token or assertion across a network in clear.
/// The metadata servers are the exceptions, plain HTTP by their owners' design: Google's is not checked here (its
/// host comes from the environment, not a file), and AWS's instance metadata service passes `awsMetadataProblem`.
enum SafeURL {
    /// The EC2 instance metadata service, on its link-local IPv4 address and its IPv6 one (Nitro instances).
    static let awsMetadataHosts: Set<String> = ["169.254.169.254", "fd00:ec2::254"]

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

    /// Why `text` may not be used as an AWS instance metadata URL (`region_url`, `url`, `imdsv2_session_token_url`),
    /// or `nil` if it may: what `problem` allows, and plain `http://` to the instance metadata service itself, which
    /// AWS serves only so. It answers from the instance, never across a network, and hands out the role's keys to
    /// anyone who asks it, so nothing sent to it is a secret it lacks.
    static func awsMetadataProblem(_ text: String) -> String? {
        guard let problem = problem(text) else { return nil }
        guard let components = URLComponents(string: text), components.scheme?.lowercased() == "http",
            let host = components.host?.lowercased(), components.user == nil, components.password == nil
        else { return problem }
        let bare = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        guard awsMetadataHosts.contains(bare) else {
            return "is plain http:// to a host other than this machine or the AWS instance metadata service "
                + "(169.254.169.254, [fd00:ec2::254])"
        }
        return nil
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
