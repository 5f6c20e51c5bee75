package dev.tokengate.android;

import java.util.concurrent.atomic.AtomicLong;

/** A {@link TokenClock} moved by hand; {@code sleep} moves it instead of waiting. */
final class ManualClock implements TokenClock {
    private final AtomicLong now;

    ManualClock(long startMillis) {
        now = new AtomicLong(startMillis);
    }

    @Override
    public long nowMillis() {
        return now.get();
    }

    @Override
    public void sleep(long millis) {
        now.addAndGet(millis);
    }

    void set(long millis) {
        now.set(millis);
    }
}
