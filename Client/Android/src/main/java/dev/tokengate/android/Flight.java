package dev.tokengate.android;

import java.util.concurrent.CountDownLatch;

/**
 * One fetch of one context in flight, and the threads waiting for it: its leader fetches, every other thread that
 * needs the context's token meanwhile waits here for the same outcome (single flight).
 */
final class Flight {
    private final CountDownLatch done = new CountDownLatch(1);
    private volatile Outcome outcome;

    /** Hands {@code result} to every waiting thread; called once, by the leader. */
    void complete(Outcome result) {
        outcome = result;
        done.countDown();
    }

    /** The outcome, once the leader has one. */
    Outcome await() throws InterruptedException {
        done.await();
        return outcome;
    }

    /** A token, a failure, or neither: the fetch was abandoned (its leader interrupted, or it never started). */
    static final class Outcome {
        static final Outcome ABANDONED = new Outcome(null, null);

        final FleetEngineToken token;
        final TokenGateException failure;

        Outcome(FleetEngineToken token, TokenGateException failure) {
            this.token = token;
            this.failure = failure;
        }
    }
}
