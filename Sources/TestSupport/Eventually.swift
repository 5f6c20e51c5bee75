/// Whether `condition` holds within `limit`, asked every `interval` (and once more at the end). For what the server
/// or the pool does in its own time: the limit is generous, since the whole suite may be sharing a loaded machine
/// (there a request the router answers waited 8 s for a thread), and a condition that never holds still fails the
/// test. A condition that holds returns at once, so the limit costs nothing when the test passes.
package func eventually(
    within limit: Duration = .seconds(30), every interval: Duration = .milliseconds(20),
    _ condition: () async throws -> Bool
) async throws -> Bool {
    let clock = ContinuousClock()
    let deadline = clock.now + limit
    while clock.now < deadline {
        if try await condition() { return true }
        try await Task.sleep(for: interval)
    }
    return try await condition()
}
