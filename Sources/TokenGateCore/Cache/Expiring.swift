/// A value that stops being usable at a wall-clock time, such as an issued token.
///
/// ```swift
/// extension DeliveredToken: Expiring {}   // `expiresAt` is the verified token's `exp`
/// ```
package protocol Expiring: Sendable {
    /// When the value expires, in seconds since the Unix epoch.
    var expiresAt: Int64 { get }
}
