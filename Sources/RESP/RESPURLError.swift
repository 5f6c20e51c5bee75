/// Why a string is not a `redis://` or `rediss://` URL this client accepts. Never holds the password.
package enum RESPURLError: Error, Sendable, Hashable {
    /// The scheme is not `redis` or `rediss` (or there is no `://`).
    case unsupportedScheme(String)
    /// Nothing between the credentials and the port or path.
    case missingHost
    /// A port that is not a number from 1 to 65535.
    case invalidPort(String)
    /// A path that is not `/` followed by a database number.
    case invalidDatabase(String)
    /// A `%` not followed by two hexadecimal digits in the user name or password.
    case invalidPercentEncoding
    /// A query (`?…`) or fragment (`#…`): options go in the configuration, not the URL.
    case unsupportedComponent(String)
}
