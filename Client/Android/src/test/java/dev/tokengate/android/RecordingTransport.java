package dev.tokengate.android;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The default {@link UrlConnectionTransport} to the real gateway, recording each request's URL and answer status.
 * {@link #goOffline(int)} points requests at a loopback port nobody listens on (a real refused connection), and
 * {@link #delayMillis} holds each request back so concurrent callers certainly overlap.
 */
final class RecordingTransport implements HttpTransport {
    private final UrlConnectionTransport inner = new UrlConnectionTransport(5_000, 10_000);
    private final List<String> urls = new ArrayList<>();
    private final List<Integer> statuses = new ArrayList<>();
    private final AtomicInteger inFlight = new AtomicInteger();
    private volatile int mostInFlight;
    private volatile int offlinePort;
    volatile long delayMillis;

    @Override
    public TransportResponse get(String url, Map<String, String> headers) throws IOException {
        int port = offlinePort;
        String target = port == 0 ? url : url.replaceFirst("^http://127\\.0\\.0\\.1:\\d+/", "http://127.0.0.1:" + port + "/");
        synchronized (this) {
            urls.add(target);
        }
        int now = inFlight.incrementAndGet();
        synchronized (this) {
            mostInFlight = Math.max(mostInFlight, now);
        }
        try {
            if (delayMillis > 0) Thread.sleep(delayMillis);
            TransportResponse response = inner.get(target, headers);
            synchronized (this) {
                statuses.add(response.status());
            }
            return response;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        } finally {
            inFlight.decrementAndGet();
        }
    }

    /** Sends every later request to {@code deadPort} on loopback (0: to the gateway again). */
    void goOffline(int deadPort) {
        offlinePort = deadPort;
    }

    synchronized int count() {
        return urls.size();
    }

    synchronized List<String> urls() {
        return new ArrayList<>(urls);
    }

    synchronized List<Integer> statuses() {
        return new ArrayList<>(statuses);
    }

    synchronized int mostInFlight() {
        return mostInFlight;
    }
}
