import Synchronization
import Testing
import TokenGateCore

/// Spins (yielding, never sleeping) until `condition` holds; records an issue and throws after a bounded number of
/// turns.
func yieldUntil(
    _ condition: () -> Bool, sourceLocation: SourceLocation = #_sourceLocation
) async throws {
    for _ in 0..<1_000_000 {
        if condition() { return }
        await Task.yield()
    }
    Issue.record("condition still false after 1 000 000 turns", sourceLocation: sourceLocation)
    throw ConditionNeverHeld()
}

struct ConditionNeverHeld: Error {}
