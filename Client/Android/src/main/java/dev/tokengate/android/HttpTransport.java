package dev.tokengate.android;

import java.io.IOException;
import java.util.Map;

/**
 * Sends one GET to the gateway and returns its answer, whatever the status; throws only when no HTTP answer arrived.
 *
 * <p>The default is {@link UrlConnectionTransport} ({@link java.net.HttpURLConnection}). An app may supply its own
 * (OkHttp with certificate pinning, say); it must not follow redirects, since the request carries the app's
 * credential. A {@link TokenGateException} it throws passes through unchanged; an {@link IOException} becomes a
 * {@link NetworkException}.
 *
 * <pre>{@code
 * HttpTransport counting = (url, headers) -> { requests.incrementAndGet(); return inner.get(url, headers); };
 * }</pre>
 */
public interface HttpTransport {
    /**
     * Performs {@code GET url} with {@code headers} ({@code Authorization}, {@code Accept}: never log them).
     * Non-2xx statuses are returned, not thrown.
     */
    TransportResponse get(String url, Map<String, String> headers) throws IOException;
}
