/// A value that stops being usable at a wall-clock time, such as an issued token.
///
/// ```swift
/// extension IssuedToken: Expiring {}   // `expiresAt` is the JWT's `exp`
/// ```
package protocol Expiring: Sendable {
    /// When the value expires, in seconds since the Unix epoch.
    var expiresAt: Int64 { get }
}
