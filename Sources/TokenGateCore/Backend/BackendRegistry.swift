/// The compile-time plugin table: backend factories by their `type:` name.
public struct BackendRegistry: Sendable {
    private let factories: [String: any TokenBackendFactory]

    /// Creates a registry. Two factories for one type is a programmer error.
    public init(_ factories: [any TokenBackendFactory]) {
        var table: [String: any TokenBackendFactory] = [:]
        for factory in factories {
            precondition(table[factory.type] == nil, "two backend factories for type '\(factory.type)'")
            table[factory.type] = factory
        }
        self.factories = table
    }

    /// The registered type names, sorted.
    public var types: [String] { factories.keys.sorted() }

    /// The factory for `type`, or `nil`.
    public func factory(for type: String) -> (any TokenBackendFactory)? { factories[type] }
}
