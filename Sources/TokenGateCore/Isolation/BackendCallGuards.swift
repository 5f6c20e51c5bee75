/// One provider's guards of its backend calls, one per token type: a type whose signing account fails (a consumer
/// account whose grant was revoked) opens its own circuit and fills its own slots, and the provider's other types
/// go on being minted. Each type has `maxConcurrentCalls` slots of its own.
struct BackendCallGuards: Sendable {
    /// The guard of each token type the backend issues.
    let byType: [TokenType: CallGuard]

    /// The guard of `type`'s calls.
    func callGuard(for type: TokenType) -> CallGuard? { byType[type] }

    /// Every guard, by token type.
    var all: [(type: TokenType, callGuard: CallGuard)] { byType.sorted { $0.key < $1.key }.map { ($0.key, $0.value) } }
}
