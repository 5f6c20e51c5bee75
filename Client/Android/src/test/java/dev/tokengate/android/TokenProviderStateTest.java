package dev.tokengate.android;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * What a failure leaves behind, on answers scripted by the test where the real gateway cannot give them on cue
 * (docs/client.md, "One error, three clients"); TokenProviderErrorTest provokes the same codes from the real gateway.
 */
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class TokenProviderStateTest {
    private static final TokenContext TRIP = TokenContext.trip("trip-42");
    private static final long START = 1_800_000_000_000L;

    private static TokenProvider provider(ScriptedTransport transport, ManualClock clock) {
        return TokenProvider.builder("https://tokens.acme.example", "acme-rides", () -> "s3cret-session")
                .transport(transport).clock(clock).refreshExecutor(new QueuedExecutor()).build();
    }

    @ParameterizedTest
    @CsvSource({
        "400, invalid_request, INVALID_REQUEST",
        "401, unauthenticated, UNAUTHENTICATED",
        "403, forbidden, FORBIDDEN",
        "404, unknown_provider, NOT_FOUND",
        "404, no_token_for_context, NO_TOKEN_FOR_CONTEXT",
    })
    void theGatewaysRefusalsDropTheCachedToken(int status, String serverCode, TokenGateException.Code code) {
        ManualClock clock = new ManualClock(START);
        ScriptedTransport transport = new ScriptedTransport(
                (index, url) -> index == 0 ? ScriptedTransport.token("jwt-1", clock.nowMillis()) : ScriptedTransport.error(status, serverCode));
        TokenProvider tokens = provider(transport, clock);
        assertEquals("jwt-1", tokens.token(TRIP));
        assertEquals(code, assertThrows(TokenGateException.class, () -> tokens.refresh(TRIP)).code());
        assertTrue(tokens.cachedContexts().isEmpty());
        assertEquals(code, assertThrows(TokenGateException.class, () -> tokens.token(TRIP)).code());
        assertEquals(3, transport.count()); // never retried; the next caller asks again and is refused too
    }

    @Test
    void aNetworkFailureIsTriedThreeTimesByDefaultWithBackoff() {
        ManualClock clock = new ManualClock(START);
        ScriptedTransport transport = new ScriptedTransport((index, url) -> null);
        TokenProvider tokens = provider(transport, clock);
        NetworkException offline = assertThrows(NetworkException.class, () -> tokens.token(TRIP));
        assertEquals(3, transport.count());
        long waited = clock.nowMillis() - START; // 0.5 s then 1 s, each shortened by up to half
        assertTrue(waited >= 750 && waited <= 1500, "waited " + waited + " ms");
        assertInstanceOf(java.net.ConnectException.class, offline.getCause());
    }

    @Test
    void aServerErrorsLongRetryAfterSurfacesAtOnceWithoutACooldown() {
        ManualClock clock = new ManualClock(START);
        ScriptedTransport transport = new ScriptedTransport(
                (index, url) -> ScriptedTransport.error(503, "backend_unavailable", "Retry-After", "10"));
        TokenProvider tokens = provider(transport, clock);
        BackendUnavailableException unavailable = assertThrows(BackendUnavailableException.class, () -> tokens.token(TRIP));
        assertEquals(10L, unavailable.retryAfterSeconds());
        assertEquals(START, clock.nowMillis()); // not waited for: longer than maxRetryAfterSeconds (5)
        assertThrows(BackendUnavailableException.class, () -> tokens.token(TRIP));
        assertEquals(2, transport.count()); // only a 429's Retry-After keeps the next caller from asking
    }

    @Test
    void aServerErrorsShortRetryAfterIsWaitedExactly() {
        ManualClock clock = new ManualClock(START);
        ScriptedTransport transport = new ScriptedTransport((index, url) -> index == 0
                ? ScriptedTransport.error(503, "backend_unavailable", "Retry-After", "2")
                : ScriptedTransport.token("jwt-1", clock.nowMillis()));
        assertEquals("jwt-1", provider(transport, clock).token(TRIP));
        assertEquals(START + 2_000, clock.nowMillis());
        assertEquals(2, transport.count());
    }

    @Test
    void whileCoolingDownTheCachedTokenServesUntilMinRemainingThenThe429WithoutARequest() {
        ManualClock clock = new ManualClock(START);
        ScriptedTransport transport = new ScriptedTransport((index, url) -> index == 0
                ? ScriptedTransport.token("jwt-1", clock.nowMillis())
                : ScriptedTransport.error(429, "rate_limited", "Retry-After", "600"));
        TokenProvider tokens = provider(transport, clock);
        FleetEngineToken cached = tokens.fleetEngineToken(TRIP);
        clock.set(cached.expiresAtMillis() - 250_000); // below the margin: the caller's fetch is refused 429
        assertSame(cached, tokens.fleetEngineToken(TRIP));
        clock.set(cached.expiresAtMillis() - 190_000);
        assertSame(cached, tokens.fleetEngineToken(TRIP));
        assertEquals(2, transport.count());
        clock.set(cached.expiresAtMillis() - 110_000); // less than minRemaining (120 s) left
        RateLimitedException limited = assertThrows(RateLimitedException.class, () -> tokens.token(TRIP));
        assertEquals(460L, limited.retryAfterSeconds());
        assertEquals(2, transport.count());
    }

    @Test
    void anUnusableAnswerIsNotRetriedAndTheCachedTokenServesUntilMinRemaining() {
        ManualClock clock = new ManualClock(START);
        ScriptedTransport transport = new ScriptedTransport((index, url) -> index == 0
                ? ScriptedTransport.token("jwt-1", clock.nowMillis())
                : ScriptedTransport.answer(200, "<html>captive portal</html>"));
        TokenProvider tokens = provider(transport, clock);
        FleetEngineToken cached = tokens.fleetEngineToken(TRIP);
        clock.set(cached.expiresAtMillis() - 200_000);
        assertSame(cached, tokens.fleetEngineToken(TRIP));
        assertEquals(2, transport.count());
        clock.set(cached.expiresAtMillis() - 110_000);
        assertThrows(InvalidResponseException.class, () -> tokens.token(TRIP));
        assertEquals(3, transport.count());
    }

    @Test
    void aFailingCredentialSourceSendsNothingAndTheCachedTokenServes() {
        ManualClock clock = new ManualClock(START);
        ScriptedTransport transport = new ScriptedTransport((index, url) -> ScriptedTransport.token("jwt-1", clock.nowMillis()));
        java.util.concurrent.atomic.AtomicInteger asked = new java.util.concurrent.atomic.AtomicInteger();
        TokenProvider tokens = TokenProvider.builder("https://tokens.acme.example", "acme-rides", () -> {
            if (asked.incrementAndGet() > 1) throw new IllegalStateException("the session store is locked");
            return "s3cret-session";
        }).transport(transport).clock(clock).refreshExecutor(new QueuedExecutor()).build();
        FleetEngineToken cached = tokens.fleetEngineToken(TRIP);
        clock.set(cached.expiresAtMillis() - 200_000);
        assertSame(cached, tokens.fleetEngineToken(TRIP));
        clock.set(cached.expiresAtMillis() - 110_000);
        assertThrows(CredentialUnavailableException.class, () -> tokens.token(TRIP));
        assertEquals(1, transport.count());
    }

    @Test
    void anExplicitRefreshThrowsItsFailureRatherThanTheCachedToken() {
        ManualClock clock = new ManualClock(START);
        ScriptedTransport transport = new ScriptedTransport((index, url) ->
                index == 0 ? ScriptedTransport.token("jwt-1", clock.nowMillis()) : ScriptedTransport.error(503, "backend_unavailable"));
        TokenProvider tokens = provider(transport, clock);
        FleetEngineToken cached = tokens.fleetEngineToken(TRIP);
        assertThrows(BackendUnavailableException.class, () -> tokens.refresh(TRIP));
        assertEquals(4, transport.count());
        assertSame(cached, tokens.fleetEngineToken(TRIP)); // kept, and still served to ordinary callers
        assertEquals(4, transport.count());
    }

    @Test
    void anExplicitRefreshDuringACooldownIsRefusedWithoutARequest() {
        ManualClock clock = new ManualClock(START);
        ScriptedTransport transport = new ScriptedTransport((index, url) -> index == 0
                ? ScriptedTransport.token("jwt-1", clock.nowMillis())
                : ScriptedTransport.error(429, "rate_limited", "Retry-After", "600"));
        TokenProvider tokens = provider(transport, clock);
        FleetEngineToken cached = tokens.fleetEngineToken(TRIP);
        RateLimitedException limited = assertThrows(RateLimitedException.class, () -> tokens.refresh(TRIP));
        assertEquals(600L, limited.retryAfterSeconds());
        clock.sleep(100_000);
        RateLimitedException cooling = assertThrows(RateLimitedException.class, () -> tokens.refresh(TRIP));
        assertEquals(500L, cooling.retryAfterSeconds());
        assertEquals(2, transport.count());
        assertSame(cached, tokens.fleetEngineToken(TRIP));
    }
}
