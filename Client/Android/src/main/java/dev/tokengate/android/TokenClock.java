package dev.tokengate.android;

/**
 * Wall-clock time and waiting, injected so tests drive time by hand: refresh-ahead and expiry are tested without
 * sleeping.
 *
 * <pre>{@code
 * final class ManualClock implements TokenClock {
 *     private final AtomicLong now = new AtomicLong(1_800_000_000_000L);
 *     public long nowMillis() { return now.get(); }
 *     public void sleep(long millis) { now.addAndGet(millis); }
 *     void advance(long millis) { now.addAndGet(millis); }
 * }
 * }</pre>
 */
public interface TokenClock {
    /** The system clock: {@link System#currentTimeMillis()} and {@link Thread#sleep(long)}. */
    TokenClock SYSTEM = new TokenClock() {
        @Override
        public long nowMillis() {
            return System.currentTimeMillis();
        }

        @Override
        public void sleep(long millis) throws InterruptedException {
            Thread.sleep(millis);
        }
    };

    /** Milliseconds since 1970 on this device; token deadlines are kept on this clock. */
    long nowMillis();

    /** Waits {@code millis} (a backoff, or a {@code Retry-After}); throws if the thread is interrupted. */
    void sleep(long millis) throws InterruptedException;
}
