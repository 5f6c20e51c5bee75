package dev.tokengate.android;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Map;
import org.junit.jupiter.api.Test;

/**
 * How answers become tokens and exceptions, on hand-made answers in the gateway's documented shapes
 * (docs/http-api.md); the same classification is exercised against the real gateway in TokenProviderErrorTest.
 */
class TokenResponseParserTest {
    private static final TokenContext TRIP = TokenContext.trip("trip-42");

    private static TransportResponse answer(int status, String body, String... headers) {
        Map<String, String> fields = new HashMap<>();
        for (int i = 0; i < headers.length; i += 2) fields.put(headers[i], headers[i + 1]);
        return new TransportResponse(status, fields, body.getBytes(StandardCharsets.UTF_8));
    }

    @Test
    void deadlinesAreOnTheDevicesClockFromExpiresInWhateverItsSkew() {
        // The device's clock is a day behind the gateway's: expiresAt means nothing on it, expiresIn does.
        long sent = 1_700_000_000_000L;
        FleetEngineToken token = TokenResponseParser.token(answer(200,
                "{\"token\":\"jwt\",\"issuedAt\":1795291871,\"expiresAt\":1795295471,\"expiresIn\":3600,\"refreshAfter\":1795294871}"),
                TRIP, sent, sent + 250);
        assertEquals(sent + 3_599_000, token.expiresAtMillis());
        assertEquals(token.expiresAtMillis() - 600_000, token.refreshAtMillis());
        assertEquals(sent + 250, token.receivedAtMillis());
        assertEquals(3598, token.expiresInSeconds(sent + 1_000));
    }

    @Test
    void withoutExpiresInTheAbsoluteExpiryAndADefaultLeadAreUsed() {
        long now = 1_795_291_871_000L;
        FleetEngineToken token = TokenResponseParser.token(answer(200, "{\"token\":\"jwt\",\"expiresAt\":1795295471}"), TRIP, now, now);
        assertEquals(1_795_295_471_000L, token.expiresAtMillis());
        assertEquals(1_795_295_471_000L - TokenResponseParser.DEFAULT_REFRESH_LEAD_MILLIS, token.refreshAtMillis());
    }

    @Test
    void aTokenAlreadyDueIsDueAtOnce() {
        long now = 1_000_000L;
        FleetEngineToken token = TokenResponseParser.token(answer(200,
                "{\"token\":\"jwt\",\"expiresAt\":1000,\"expiresIn\":301,\"refreshAfter\":100}"), TRIP, now, now);
        assertEquals(now, token.refreshAtMillis());
    }

    @Test
    void anUnusable200IsAnInvalidResponse() {
        for (String body : new String[] {"", "[]", "{\"token\":\"\",\"expiresIn\":3600}", "{\"token\":1,\"expiresIn\":3600}",
                "{\"token\":\"jwt\"}", "{\"token\":\"jwt\",\"expiresIn\":\"3600\"}", "{\"token\":\"jwt\",\"expiresIn\":0}",
                "<html>ok</html>"}) {
            InvalidResponseException e = assertThrows(InvalidResponseException.class,
                    () -> TokenResponseParser.token(answer(200, body, "X-Request-ID", "r1"), TRIP, 0, 0), body);
            assertEquals("r1", e.requestId());
        }
    }

    @Test
    void errorAnswersAreClassifiedByStatusAndKeepTheGatewaysCode() {
        Object[][] cases = {
            {401, "unauthenticated", UnauthenticatedException.class},
            {403, "forbidden", ForbiddenException.class},
            {410, "context_ended", ContextEndedException.class},
            {429, "rate_limited", RateLimitedException.class},
            {400, "invalid_request", InvalidRequestException.class},
            {404, "unknown_provider", NotFoundException.class},
            {404, "no_token_for_context", NoTokenForContextException.class},
            {502, "backend_error", BackendUnavailableException.class},
            {503, "backend_unavailable", BackendUnavailableException.class},
            {504, "backend_timeout", BackendUnavailableException.class},
            {405, "method_not_allowed", InvalidResponseException.class},
        };
        for (Object[] c : cases) {
            TokenGateException e = TokenResponseParser.failure(answer((Integer) c[0],
                    "{\"error\":{\"code\":\"" + c[1] + "\",\"message\":\"fixed text\"}}", "x-request-id", "req-7"));
            assertInstanceOf((Class<?>) c[2], e, String.valueOf(c[1]));
            assertEquals(c[0], e.status());
            assertEquals(c[1], e.serverCode());
            assertEquals("req-7", e.requestId());
        }
    }

    @Test
    void anAnswerWithoutTokenGatesBodyIsJudgedByItsStatus() {
        TokenGateException e = TokenResponseParser.failure(answer(502, "<html>Bad gateway</html>"));
        assertInstanceOf(BackendUnavailableException.class, e);
        assertNull(e.serverCode());
        assertInstanceOf(InvalidResponseException.class, TokenResponseParser.failure(answer(302, "", "Location", "https://elsewhere")));
        assertInstanceOf(NotFoundException.class, TokenResponseParser.failure(answer(404, "{\"error\":\"nope\"}")));
    }

    @Test
    void retryAfterIsReadAsDeltaSeconds() {
        assertEquals(Long.valueOf(7), TokenResponseParser.failure(answer(429, "{}", "Retry-After", " 7 ")).retryAfterSeconds());
        assertNull(TokenResponseParser.retryAfterSeconds("Fri, 31 Dec 1999 23:59:59 GMT"));
        assertNull(TokenResponseParser.retryAfterSeconds("-1"));
        assertNull(TokenResponseParser.retryAfterSeconds(null));
    }

    @Test
    void onlyTheNetwork5xxAnd429AreRetryable() {
        EnumSet<TokenGateException.Code> retryable = EnumSet.noneOf(TokenGateException.Code.class);
        for (TokenGateException.Code code : TokenGateException.Code.values()) {
            if (code.isRetryable()) retryable.add(code);
        }
        assertEquals(EnumSet.of(TokenGateException.Code.NETWORK, TokenGateException.Code.BACKEND_UNAVAILABLE,
                TokenGateException.Code.RATE_LIMITED), retryable);
    }
}
