package dev.tokengate.android;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.net.HttpURLConnection;
import java.net.URL;
import java.net.URLConnection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The default {@link HttpTransport}: {@link HttpURLConnection}, no caches, no redirects (a 3xx is returned as is and
 * refused as an invalid response, so the credential is never replayed elsewhere), a connect and a read timeout, and a
 * cap on the body. Thread-safe: one connection per request, kept alive by the platform's pool.
 */
public final class UrlConnectionTransport implements HttpTransport {
    /** The largest answer body read: a token answer is about 1.5 KiB. */
    public static final int MAX_BODY_BYTES = 64 * 1024;

    private final int connectTimeoutMillis;
    private final int readTimeoutMillis;

    /** A transport with 10-second connect and read timeouts. */
    public UrlConnectionTransport() {
        this(10_000, 10_000);
    }

    /** A transport with the given timeouts (each at least 1 ms). */
    public UrlConnectionTransport(int connectTimeoutMillis, int readTimeoutMillis) {
        if (connectTimeoutMillis < 1 || readTimeoutMillis < 1) throw new IllegalArgumentException("timeouts must be positive");
        this.connectTimeoutMillis = connectTimeoutMillis;
        this.readTimeoutMillis = readTimeoutMillis;
    }

    @Override
    public TransportResponse get(String url, Map<String, String> headers) throws IOException {
        URLConnection opened = new URL(url).openConnection();
        if (!(opened instanceof HttpURLConnection)) throw new IOException("not an http(s) URL");
        HttpURLConnection connection = (HttpURLConnection) opened;
        try {
            connection.setRequestMethod("GET");
            connection.setInstanceFollowRedirects(false);
            connection.setUseCaches(false);
            connection.setConnectTimeout(connectTimeoutMillis);
            connection.setReadTimeout(readTimeoutMillis);
            for (Map.Entry<String, String> field : headers.entrySet()) {
                connection.setRequestProperty(field.getKey(), field.getValue());
            }
            int status = connection.getResponseCode();
            if (status < 100) throw new IOException("the answer is not HTTP");
            // An error status's body is on the error stream; it is null when there is none.
            InputStream stream = status >= 400 ? connection.getErrorStream() : connection.getInputStream();
            byte[] body = stream == null ? new byte[0] : readCapped(stream);
            return new TransportResponse(status, firstValues(connection.getHeaderFields()), body);
        } catch (IOException | RuntimeException failure) {
            connection.disconnect();
            throw failure;
        }
    }

    private static byte[] readCapped(InputStream stream) throws IOException {
        try (InputStream input = stream) {
            ByteArrayOutputStream collected = new ByteArrayOutputStream();
            byte[] buffer = new byte[8192];
            int read;
            while ((read = input.read(buffer)) != -1) {
                if (collected.size() + read > MAX_BODY_BYTES) {
                    throw TokenGateException.create(TokenGateException.Code.INVALID_RESPONSE, TokenGateException.Details.NONE,
                            "the answer body is larger than " + MAX_BODY_BYTES + " bytes", null);
                }
                collected.write(buffer, 0, read);
            }
            return collected.toByteArray();
        }
    }

    private static Map<String, String> firstValues(Map<String, List<String>> fields) {
        Map<String, String> first = new HashMap<>();
        for (Map.Entry<String, List<String>> field : fields.entrySet()) {
            // The status line is listed under a null name.
            if (field.getKey() != null && !field.getValue().isEmpty()) first.put(field.getKey(), field.getValue().get(0));
        }
        return first;
    }
}
