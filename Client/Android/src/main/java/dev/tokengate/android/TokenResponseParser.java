package dev.tokengate.android;

import java.util.Map;

/**
 * Reads the gateway's answers: a 200's token and deadlines, or an error answer's status and stable code.
 *
 * <p>The 200 body is TokenGate's default shape, {@code {"token", "expiresIn", "expiresAt", "refreshAfter", …}}
 * (docs/http-api.md). Deadlines go on this device's clock without trusting it: the token expires at the request's
 * start plus {@code expiresIn}, less one second (the gateway's whole seconds), so a phone whose clock is minutes off
 * still holds the token's true life; {@code refreshAfter} keeps the gateway's lead before expiry
 * ({@code expiresAt - refreshAfter}). Without {@code expiresIn} the absolute {@code expiresAt} is used.
 */
final class TokenResponseParser {
    /** The refresh lead when the body gives none: 10 minutes, as Google's Android samples refresh. */
    static final long DEFAULT_REFRESH_LEAD_MILLIS = 600_000;

    private TokenResponseParser() {}

    /** The token of a 2xx answer, or {@link InvalidResponseException}. */
    static FleetEngineToken token(TransportResponse response, TokenContext context, long sentAtMillis, long receivedAtMillis) {
        Map<String, Object> body;
        try {
            body = Json.asObject(Json.parse(response.body()));
        } catch (IllegalArgumentException e) {
            throw invalid(response, "the answer is not JSON: " + e.getMessage());
        }
        if (body == null) throw invalid(response, "the answer is not a JSON object");
        Object token = body.get("token");
        if (!(token instanceof String) || ((String) token).isEmpty()) throw invalid(response, "the answer carries no token");
        Double expiresIn = finite(body.get("expiresIn"));
        Double expiresAt = finite(body.get("expiresAt"));
        long expiresAtMillis;
        if (expiresIn != null) {
            expiresAtMillis = sentAtMillis + Math.round(expiresIn * 1000) - 1000;
        } else if (expiresAt != null) {
            expiresAtMillis = Math.round(expiresAt * 1000);
        } else {
            throw invalid(response, "the answer has neither expiresIn nor expiresAt");
        }
        if (expiresAtMillis <= receivedAtMillis) throw invalid(response, "the token had expired on receipt");
        long lead = DEFAULT_REFRESH_LEAD_MILLIS;
        Double refreshAfter = finite(body.get("refreshAfter"));
        if (refreshAfter != null && expiresAt != null && expiresAt >= refreshAfter) {
            lead = Math.round((expiresAt - refreshAfter) * 1000);
        }
        // A token already due (the gateway serves it while it refreshes behind it) is due at once; the provider paces
        // the refreshes that causes.
        long refreshAtMillis = Math.min(Math.max(expiresAtMillis - lead, receivedAtMillis), expiresAtMillis);
        return new FleetEngineToken((String) token, context, receivedAtMillis, expiresAtMillis, refreshAtMillis);
    }

    /** The exception a non-2xx answer stands for, classified by status, a 404 also by the body's code. */
    static TokenGateException failure(TransportResponse response) {
        int status = response.status();
        String serverCode = null;
        String serverMessage = null;
        Map<String, Object> error = errorObject(response.body());
        if (error != null && error.get("code") instanceof String) serverCode = (String) error.get("code");
        if (error != null && error.get("message") instanceof String) serverMessage = (String) error.get("message");
        TokenGateException.Details details = new TokenGateException.Details(
                status, serverCode, retryAfterSeconds(response.header("Retry-After")), response.header("X-Request-ID"));
        TokenGateException.Code code;
        String advice;
        if (status == 401) {
            code = TokenGateException.Code.UNAUTHENTICATED;
            advice = "the gateway refused the app's credential: sign the user in again";
        } else if (status == 403) {
            code = TokenGateException.Code.FORBIDDEN;
            advice = "not allowed: no token of this type, or for this trip or vehicle, for this caller";
        } else if (status == 410) {
            code = TokenGateException.Code.CONTEXT_ENDED;
            advice = "an operator ended this trip, vehicle, task or shipment: no new tokens for it";
        } else if (status == 429) {
            code = TokenGateException.Code.RATE_LIMITED;
            advice = "rate limited by the gateway";
        } else if (status == 400) {
            code = TokenGateException.Code.INVALID_REQUEST;
            advice = "the gateway rejected the request as invalid";
        } else if (status == 404 && "no_token_for_context".equals(serverCode)) {
            code = TokenGateException.Code.NO_TOKEN_FOR_CONTEXT;
            advice = "the gateway's token source holds no token for this context";
        } else if (status == 404) {
            code = TokenGateException.Code.NOT_FOUND;
            advice = "unknown provider or token type";
        } else if (status >= 500 && status <= 599) {
            code = TokenGateException.Code.BACKEND_UNAVAILABLE;
            advice = "the gateway or its token backend is unavailable";
        } else {
            code = TokenGateException.Code.INVALID_RESPONSE;
            advice = "unexpected HTTP status " + status;
        }
        String message = serverMessage == null ? advice : advice + " (" + serverMessage + ")";
        return TokenGateException.create(code, details, message, null);
    }

    /** {@code Retry-After} as delta-seconds, the form the gateway sends; an HTTP-date or garbage is ignored. */
    static Long retryAfterSeconds(String value) {
        if (value == null) return null;
        String text = value.trim();
        if (text.isEmpty() || text.length() > 9) return null;
        for (int i = 0; i < text.length(); i++) {
            if (text.charAt(i) < '0' || text.charAt(i) > '9') return null;
        }
        return Long.valueOf(text);
    }

    private static Double finite(Object value) {
        if (!(value instanceof Double)) return null;
        double number = (Double) value;
        return Double.isNaN(number) || Double.isInfinite(number) ? null : number;
    }

    private static InvalidResponseException invalid(TransportResponse response, String message) {
        TokenGateException.Details details =
                new TokenGateException.Details(response.status(), null, null, response.header("X-Request-ID"));
        return new InvalidResponseException(details, message, null);
    }

    /** {@code error} of a {@code {"error": {"code": …, "message": …}}} body, or null for anything else (a proxy's page). */
    private static Map<String, Object> errorObject(byte[] body) {
        try {
            Map<String, Object> object = Json.asObject(Json.parse(body));
            return object == null ? null : Json.asObject(object.get("error"));
        } catch (IllegalArgumentException notJson) {
            return null;
        }
    }
}
