import OpenSSLPrimitives

extension RESPConfiguration {
    /// Parses `redis://[user[:password]@]host[:port][/db]`, or `rediss://…` for TLS with the system's trust roots.
    /// User name and password are percent-decoded; IPv6 hosts go in brackets (`redis://[::1]:6379`). A password
    /// supplied separately (from the environment, say) is set on the result afterwards.
    package init(url: String) throws(RESPURLError) {
        guard let separator = url.firstRange(of: "://") else { throw .unsupportedScheme(String(url.prefix(16))) }
        let scheme = url[..<separator.lowerBound].lowercased()
        guard scheme == "redis" || scheme == "rediss" else { throw .unsupportedScheme(scheme) }
        var rest = url[separator.upperBound...]
        if let extra = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) {
            throw .unsupportedComponent(String(rest[extra]))
        }

        // The last "@" ends the credentials: a password may hold an unencoded "@", a host never does.
        let pathStart = rest.firstIndex(of: "/") ?? rest.endIndex
        var authority = rest[..<pathStart]
        let path = rest[pathStart...]
        var username: String?
        var password: String?
        if let at = authority.lastIndex(of: "@") {
            let userInfo = authority[..<at]
            authority = authority[authority.index(after: at)...]
            if let colon = userInfo.firstIndex(of: ":") {
                username = try Self.percentDecoded(userInfo[..<colon])
                password = try Self.percentDecoded(userInfo[userInfo.index(after: colon)...])
            } else {
                username = try Self.percentDecoded(userInfo)
            }
            if username?.isEmpty == true { username = nil }
        }

        let (host, portText) = try Self.splitHostAndPort(authority)
        var port = 6379
        if let portText {
            guard Self.isDigits(portText), let value = Int(portText), (1...65535).contains(value) else {
                throw .invalidPort(String(portText))
            }
            port = value
        }
        self.init(host: host, port: port)
        self.username = username
        self.password = password
        if scheme == "rediss" { tls = TLS() }

        rest = path.drop(while: { $0 == "/" })
        if !rest.isEmpty {
            guard path.utf8.count == rest.utf8.count + 1, Self.isDigits(rest), let database = Int(rest) else {
                throw .invalidDatabase(String(path))
            }
            self.database = database
        }
    }

    private static func splitHostAndPort(_ authority: Substring) throws(RESPURLError) -> (String, Substring?) {
        if authority.hasPrefix("[") {
            guard let close = authority.firstIndex(of: "]") else { throw .missingHost }
            let host = authority[authority.index(after: authority.startIndex)..<close]
            let after = authority[authority.index(after: close)...]
            guard !host.isEmpty else { throw .missingHost }
            if after.isEmpty { return (String(host), nil) }
            guard after.first == ":" else { throw .invalidPort(String(after)) }
            return (String(host), after.dropFirst())
        }
        let parts = authority.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        guard let host = parts.first, !host.isEmpty else { throw .missingHost }
        return (String(host), parts.count == 2 ? parts[1] : nil)
    }

    private static func percentDecoded(_ text: Substring) throws(RESPURLError) -> String {
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(HexBytes.digitValue), let low = iterator.next().flatMap(HexBytes.digitValue)
            else { throw .invalidPercentEncoding }
            bytes.append(high << 4 | low)
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func isDigits(_ text: Substring) -> Bool {
        !text.isEmpty && text.utf8.count <= 9 && text.utf8.allSatisfy { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
    }
}
