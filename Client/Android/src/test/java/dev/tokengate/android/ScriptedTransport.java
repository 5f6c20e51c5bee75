package dev.tokengate.android;

import java.io.IOException;
import java.net.ConnectException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * A gateway played by the test, for the answers the real one cannot be made to give on cue (a 400 for a context it
 * served a moment ago, a 503 three times running): answer number {@code n} (0-based) is {@code script.answer(n, url)}.
 * Records each request's URL.
 */
final class ScriptedTransport implements HttpTransport {
    interface Script {
        /** The answer to request {@code index}, or null for no answer at all (a refused connection). */
        TransportResponse answer(int index, String url);
    }

    private final Script script;
    private final List<String> urls = new ArrayList<>();

    ScriptedTransport(Script script) {
        this.script = script;
    }

    @Override
    public TransportResponse get(String url, Map<String, String> headers) throws IOException {
        int index;
        synchronized (this) {
            index = urls.size();
            urls.add(url);
        }
        TransportResponse response = script.answer(index, url);
        if (response == null) throw new ConnectException("Connection refused (scripted)");
        return response;
    }

    synchronized int count() {
        return urls.size();
    }

    synchronized List<String> urls() {
        return new ArrayList<>(urls);
    }

    /** TokenGate's default body for a token issued at {@code nowMillis}, an hour long, refreshed 10 minutes early. */
    static TransportResponse token(String jwt, long nowMillis) {
        long issuedAt = nowMillis / 1000;
        return answer(200, "{\"token\":\"" + jwt + "\",\"issuedAt\":" + issuedAt + ",\"expiresAt\":" + (issuedAt + 3600)
                + ",\"expiresIn\":3600,\"refreshAfter\":" + (issuedAt + 3000) + "}");
    }

    /** The gateway's error body for {@code code}, with header fields given as name, value, … */
    static TransportResponse error(int status, String code, String... headers) {
        return answer(status, "{\"error\":{\"code\":\"" + code + "\",\"message\":\"Gateway says " + code + ".\"}}", headers);
    }

    static TransportResponse answer(int status, String body, String... headers) {
        Map<String, String> fields = new HashMap<>();
        for (int i = 0; i < headers.length; i += 2) fields.put(headers[i], headers[i + 1]);
        return new TransportResponse(status, fields, body.getBytes(StandardCharsets.UTF_8));
    }
}
