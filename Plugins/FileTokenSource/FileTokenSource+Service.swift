import ServiceLifecycle

extension FileTokenSource {
    /// Looks at the token file every ``pollInterval`` until the task is cancelled or the service group shuts down
    /// gracefully, then returns.
    ///
    /// New content is loaded once two looks in a row read the same bytes, so a file caught mid-write waits one more
    /// interval; a version that fails to parse keeps the previous tokens (and is logged once). Nothing in the loop
    /// ends it but cancellation. Writers should still write a new file beside the old one and `rename(2)` it into
    /// place: then every look reads either the old or the new file whole.
    package func run() async throws {
        await cancelWhenGracefulShutdown { await self.pollUntilCancelled() }
    }

    private func pollUntilCancelled() async {
        while !Task.isCancelled {
            do {
                try await Task.sleep(for: pollInterval)
            } catch {
                return  // cancelled: shutdown is not a failure
            }
            _ = reload(requiringStableContent: true)
        }
    }
}
