package dev.tokengate.android;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Executor;

/** Holds the background refreshes a provider starts until the test runs them, on the test's thread. */
final class QueuedExecutor implements Executor {
    private final List<Runnable> queued = new ArrayList<>();

    @Override
    public synchronized void execute(Runnable task) {
        queued.add(task);
    }

    synchronized int size() {
        return queued.size();
    }

    void runAll() {
        List<Runnable> tasks;
        synchronized (this) {
            tasks = new ArrayList<>(queued);
            queued.clear();
        }
        for (Runnable task : tasks) task.run();
    }
}
