package dev.tokengate.android;

import java.util.Collections;
import java.util.HashMap;
import java.util.Locale;
import java.util.Map;

/** The gateway's answer to one GET: status, header fields (looked up ignoring case) and body bytes. */
public final class TransportResponse {
    private final int status;
    private final Map<String, String> headers;
    private final byte[] body;

    /** An answer; {@code headers} maps field names (any case) to their first value. */
    public TransportResponse(int status, Map<String, String> headers, byte[] body) {
        this.status = status;
        Map<String, String> lowered = new HashMap<>();
        for (Map.Entry<String, String> field : headers.entrySet()) {
            if (field.getKey() != null && field.getValue() != null) {
                lowered.put(field.getKey().toLowerCase(Locale.ROOT), field.getValue());
            }
        }
        this.headers = Collections.unmodifiableMap(lowered);
        this.body = body.clone();
    }

    /** The HTTP status code. */
    public int status() {
        return status;
    }

    /** The value of header field {@code name}, compared case-insensitively, or null. */
    public String header(String name) {
        return headers.get(name.toLowerCase(Locale.ROOT));
    }

    /** The body bytes (a copy). */
    public byte[] body() {
        return body.clone();
    }
}
