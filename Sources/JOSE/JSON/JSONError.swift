/// Why JSON text was refused, and where.
public struct JSONError: Error, Sendable, Equatable, CustomStringConvertible {
    /// A human sentence.
    public let message: String
    /// Byte offset in the input where the problem was found.
    public let offset: Int

    /// Creates an error.
    public init(message: String, offset: Int) {
        self.message = message
        self.offset = offset
    }

    /// `message (at byte offset)`.
    public var description: String { "\(message) (at byte \(offset))" }
}
