package dev.tokengate.android;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.util.Arrays;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/** Each error the gateway answers, provoked for real, and what the provider does with it (docs/client.md's table). */
@ExtendWith(GatewayExtension.class)
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TokenProviderErrorTest {
    private static TokenContext newTrip() {
        return TokenContext.trip("trip-" + UUID.randomUUID());
    }

    @Test
    void aRefusedCredentialIsUnauthenticatedAndNotRetriedWithTheSameCredential(Gateway gateway) {
        RecordingTransport transport = new RecordingTransport();
        AtomicInteger asked = new AtomicInteger();
        TokenProvider tokens = TokenProvider.builder(gateway.url, Gateway.FLEET, () -> {
            asked.incrementAndGet();
            return "tg_not_a_key_of_this_gateway";
        }).transport(transport).maxAttempts(3).build();
        UnauthenticatedException refused = assertThrows(UnauthenticatedException.class, () -> tokens.token(newTrip()));
        assertEquals(401, refused.status());
        assertEquals("unauthenticated", refused.serverCode());
        assertEquals(TokenGateException.Code.UNAUTHENTICATED, refused.code());
        assertNotNull(refused.requestId());
        assertEquals(1, transport.count());
        assertEquals(2, asked.get()); // asked once more: an unchanged credential is not sent again
    }

    @Test
    void aRefreshedLoginIsTriedOnceAfterA401(Gateway gateway) throws Exception {
        RecordingTransport transport = new RecordingTransport();
        AtomicInteger asked = new AtomicInteger();
        TokenProvider tokens = TokenProvider.builder(gateway.url, Gateway.FLEET,
                () -> asked.getAndIncrement() == 0 ? "tg_an_expired_session" : gateway.appKey).transport(transport).build();
        TokenContext trip = newTrip();
        assertEquals(trip.id(), Jwt.authorization(tokens.token(trip), gateway.signingKey).get("tripid"));
        assertEquals(Arrays.asList(401, 200), transport.statuses());
    }

    @Test
    void aTypeTheCallerMayNotHaveIsForbiddenAndNotRetried(Gateway gateway) {
        RecordingTransport transport = new RecordingTransport();
        TokenProvider tokens = TokenProvider.builder(gateway.url, Gateway.FLEET, () -> gateway.riderKey)
                .transport(transport).maxAttempts(3).build();
        ForbiddenException refused = assertThrows(ForbiddenException.class,
                () -> tokens.token(TokenContext.vehicle("vehicle-" + UUID.randomUUID())));
        assertEquals(403, refused.status());
        assertEquals("forbidden", refused.serverCode());
        assertEquals(1, transport.count());
    }

    @Test
    void anUnknownProviderIsNotFound(Gateway gateway) {
        RecordingTransport transport = new RecordingTransport();
        TokenProvider tokens = TokenProvider.builder(gateway.url, "no-such-provider", () -> gateway.appKey)
                .transport(transport).maxAttempts(3).build();
        NotFoundException missing = assertThrows(NotFoundException.class, () -> tokens.token(newTrip()));
        assertEquals(404, missing.status());
        assertEquals("unknown_provider", missing.serverCode());
        assertEquals(1, transport.count());
    }

    @Test
    void anEndedTripIs410AndRememberedUntilCleared(Gateway gateway) throws Exception {
        RecordingTransport transport = new RecordingTransport();
        TokenProvider tokens = TokenProvider.builder(gateway.url, Gateway.FLEET, () -> gateway.appKey).transport(transport).build();
        TokenContext trip = newTrip();
        gateway.endTrip(Gateway.FLEET, trip.id());

        ContextEndedException ended = assertThrows(ContextEndedException.class, () -> tokens.token(trip));
        assertEquals(410, ended.status());
        assertEquals("context_ended", ended.serverCode());
        assertEquals(1, transport.count());

        ContextEndedException remembered = assertThrows(ContextEndedException.class, () -> tokens.token(trip));
        assertEquals(410, remembered.status());
        assertSame(ended, remembered.getCause());
        assertEquals(1, transport.count()); // no request: the trip is over

        tokens.token(newTrip()); // other trips are not affected
        tokens.clear(trip);
        assertThrows(ContextEndedException.class, () -> tokens.token(trip)); // asked again after clear(): still ended
        assertEquals(3, transport.count());
    }

    @Test
    void aTripEndedWhileCachedIsDroppedAtItsNextRefresh(Gateway gateway) throws Exception {
        RecordingTransport transport = new RecordingTransport();
        ManualClock clock = new ManualClock(System.currentTimeMillis());
        QueuedExecutor background = new QueuedExecutor();
        TokenProvider tokens = TokenProvider.builder(gateway.url, Gateway.FLEET, () -> gateway.appKey)
                .transport(transport).clock(clock).refreshExecutor(background).build();
        TokenContext trip = newTrip();
        FleetEngineToken cached = tokens.fleetEngineToken(trip);
        gateway.endTrip(Gateway.FLEET, trip.id());

        clock.set(cached.refreshAtMillis());
        assertSame(cached, tokens.fleetEngineToken(trip)); // still valid at Fleet Engine: no revocation there
        background.runAll(); // the refresh is answered 410
        assertEquals(Arrays.asList(200, 410), transport.statuses());
        assertNull(tokens.peek(trip));
        assertThrows(ContextEndedException.class, () -> tokens.token(trip));
        assertEquals(2, transport.count());
    }

    @Test
    void a429WithAShortRetryAfterIsWaitedForAndRetried(Gateway gateway) throws Exception {
        TokenContext trip = newTrip();
        String key = gateway.providerKey(Gateway.LIMITED);
        // Another device takes the trip's one-request burst (the context limit: 60/min, burst 1).
        TokenProvider.builder(gateway.url, Gateway.LIMITED, () -> key).build().token(trip);

        RecordingTransport transport = new RecordingTransport();
        TokenProvider tokens = TokenProvider.builder(gateway.url, Gateway.LIMITED, () -> key).transport(transport).build();
        long started = System.nanoTime();
        String token = tokens.token(trip);
        long waitedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - started);
        assertEquals(trip.id(), Jwt.authorization(token, gateway.signingKey).get("tripid"));
        assertEquals(Arrays.asList(429, 200), transport.statuses());
        assertTrue(waitedMillis >= 900, "waited " + waitedMillis + " ms, not the Retry-After's second");
    }

    @Test
    void a429WithALongRetryAfterIsSurfacedAndNotAskedAgainBeforeItPasses(Gateway gateway) throws Exception {
        RecordingTransport transport = new RecordingTransport();
        ManualClock clock = new ManualClock(System.currentTimeMillis());
        QueuedExecutor background = new QueuedExecutor();
        String key = gateway.providerKey(Gateway.CAPPED);
        TokenProvider tokens = TokenProvider.builder(gateway.url, Gateway.CAPPED, () -> key)
                .transport(transport).clock(clock).refreshExecutor(background).maxAttempts(3).build();
        TokenContext first = newTrip();
        TokenContext second = newTrip();
        FleetEngineToken firstToken = tokens.fleetEngineToken(first); // the caller's one request an hour

        RateLimitedException limited = assertThrows(RateLimitedException.class, () -> tokens.token(second));
        assertEquals(429, limited.status());
        assertEquals("rate_limited", limited.serverCode());
        assertTrue(limited.retryAfterSeconds() > 5 && limited.retryAfterSeconds() <= 3600, "Retry-After " + limited.retryAfterSeconds());
        assertEquals(2, transport.count()); // surfaced at once: too long to wait for

        RateLimitedException coolingDown = assertThrows(RateLimitedException.class, () -> tokens.token(second));
        assertEquals(429, coolingDown.status());
        assertTrue(coolingDown.retryAfterSeconds() <= limited.retryAfterSeconds());
        assertEquals(2, transport.count()); // not asked again before Retry-After has passed
        assertSame(firstToken, tokens.fleetEngineToken(first)); // the cached trip is still served

        // The first trip's refresh ahead meets the same caller limit, and is not tried again every 30 s meanwhile.
        clock.set(firstToken.refreshAtMillis());
        assertSame(firstToken, tokens.fleetEngineToken(first));
        background.runAll();
        assertEquals(Arrays.asList(200, 429, 429), transport.statuses());
        clock.set(firstToken.refreshAtMillis() + 60_000);
        assertSame(firstToken, tokens.fleetEngineToken(first));
        assertEquals(0, background.size());
        assertEquals(3, transport.count());
    }

    @Test
    void anUnreachableBackendIs503AndRetriedUpToMaxAttempts(Gateway gateway) {
        RecordingTransport transport = new RecordingTransport();
        String key = gateway.providerKey(Gateway.DOWN);
        TokenProvider tokens = TokenProvider.builder(gateway.url, Gateway.DOWN, () -> key)
                .transport(transport).maxAttempts(2).initialBackoffMillis(50).build();
        BackendUnavailableException down = assertThrows(BackendUnavailableException.class, () -> tokens.token(newTrip()));
        assertEquals(503, down.status());
        assertEquals("backend_unavailable", down.serverCode());
        assertTrue(down.isRetryable());
        assertEquals(Arrays.asList(503, 503), transport.statuses());
    }

    @Test
    void noAnswerIsANetworkError(Gateway gateway) throws Exception {
        TokenProvider tokens = TokenProvider.builder("http://127.0.0.1:" + Gateway.unusedPort(), Gateway.FLEET, () -> gateway.appKey)
                .maxAttempts(2).initialBackoffMillis(10).build();
        NetworkException offline = assertThrows(NetworkException.class, () -> tokens.token(newTrip()));
        assertEquals(0, offline.status());
        assertInstanceOf(IOException.class, offline.getCause());
    }

    @Test
    void aFailingCredentialSourceSendsNothing(Gateway gateway) {
        RecordingTransport transport = new RecordingTransport();
        IOException cause = new IOException("the session store is locked");
        TokenProvider failing = TokenProvider.builder(gateway.url, Gateway.FLEET, () -> {
            throw cause;
        }).transport(transport).build();
        assertSame(cause, assertThrows(CredentialUnavailableException.class, () -> failing.token(newTrip())).getCause());
        TokenProvider empty = TokenProvider.builder(gateway.url, Gateway.FLEET, () -> "").transport(transport).build();
        assertThrows(CredentialUnavailableException.class, () -> empty.token(newTrip()));
        TokenProvider injected = TokenProvider.builder(gateway.url, Gateway.FLEET, () -> gateway.appKey + "\r\nX-Evil: 1")
                .transport(transport).build();
        assertThrows(CredentialUnavailableException.class, () -> injected.token(newTrip()));
        assertEquals(0, transport.count());
    }

    @Test
    void anEmptyTripIdIsRefusedWithoutARequest(Gateway gateway) {
        RecordingTransport transport = new RecordingTransport();
        TokenProvider tokens = TokenProvider.builder(gateway.url, Gateway.FLEET, () -> gateway.appKey).transport(transport).build();
        assertThrows(InvalidRequestException.class, () -> tokens.token(TokenContext.trip("")));
        assertEquals(0, transport.count());
        assertTrue(tokens.cachedContexts().isEmpty());
    }
}
