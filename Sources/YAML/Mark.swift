/// A position in a YAML document, 1-based, as editors show it.
public struct Mark: Sendable, Hashable, CustomStringConvertible {
    /// The line, counting from 1.
    public var line: Int
    /// The column, counting from 1.
    public var column: Int

    /// Creates a mark from 1-based line and column numbers.
    public init(line: Int, column: Int) {
        self.line = line
        self.column = column
    }

    /// `line:column`, the form every configuration error starts with.
    public var description: String { "\(line):\(column)" }
}
