/// Where the fetches a task starts in a ``TokenCache`` run.
package enum TokenCacheFetches {
    /// The executor a fetch started by the current task prefers, or nil for the global executor (the default).
    ///
    /// A fetch runs in a task of its own, which would not inherit the starting task's executor preference; this
    /// value is inherited. The HTTP fast path sets its connection's event loop, so a mint it starts is signed on
    /// that loop, with no hop to another thread and back.
    @TaskLocal package static var executor: (any TaskExecutor)?
}
