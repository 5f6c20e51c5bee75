package dev.tokengate.android;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/** Reuse, single flight, refresh ahead and context switches, against the real gateway on loopback. */
@ExtendWith(GatewayExtension.class)
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TokenProviderCachingTest {
    private static TokenContext newTrip() {
        return TokenContext.trip("trip-" + UUID.randomUUID());
    }

    private static TokenProviderBuilder fleet(Gateway gateway, RecordingTransport transport) {
        return TokenProvider.builder(gateway.url, Gateway.FLEET, () -> gateway.appKey).transport(transport);
    }

    @Test
    void aTokenIsReusedWithoutAnotherRequest(Gateway gateway) throws Exception {
        RecordingTransport transport = new RecordingTransport();
        TokenProvider tokens = fleet(gateway, transport).build();
        TokenContext trip = newTrip();
        String first = tokens.token(trip);
        for (int i = 0; i < 20; i++) assertEquals(first, tokens.token(trip));
        assertEquals(1, transport.count());
        assertEquals(trip.id(), Jwt.authorization(first, gateway.signingKey).get("tripid"));
        assertEquals(Collections.singleton(trip), tokens.cachedContexts());
    }

    @Test
    void thirtyTwoThreadsAskingAtOnceMakeOneRequest(Gateway gateway) throws Exception {
        RecordingTransport transport = new RecordingTransport();
        transport.delayMillis = 300; // every caller arrives while the one request is out
        TokenProvider tokens = fleet(gateway, transport).build();
        TokenContext trip = newTrip();
        List<String> answers = askConcurrently(32, i -> tokens.token(trip));
        assertEquals(1, new HashSet<>(answers).size());
        assertEquals(1, transport.count());
        assertEquals(trip.id(), Jwt.authorization(answers.get(0), gateway.signingKey).get("tripid"));
    }

    @Test
    void thirtyTwoThreadsOverFourTripsMakeOneRequestPerTrip(Gateway gateway) throws Exception {
        RecordingTransport transport = new RecordingTransport();
        transport.delayMillis = 300;
        TokenProvider tokens = fleet(gateway, transport).build();
        List<TokenContext> trips = new ArrayList<>();
        for (int i = 0; i < 4; i++) trips.add(newTrip());
        List<String> answers = askConcurrently(32, i -> tokens.token(trips.get(i % 4)));
        for (int i = 0; i < 32; i++) {
            assertEquals(trips.get(i % 4).id(), Jwt.authorization(answers.get(i), gateway.signingKey).get("tripid"));
        }
        assertEquals(4, transport.count());
        assertEquals(4, new HashSet<>(transport.urls()).size());
    }

    @Test
    void theTokenIsRefreshedAheadInTheBackgroundFromRefreshAfter(Gateway gateway) throws Exception {
        RecordingTransport transport = new RecordingTransport();
        ManualClock clock = new ManualClock(System.currentTimeMillis());
        QueuedExecutor background = new QueuedExecutor();
        TokenProvider tokens = fleet(gateway, transport).clock(clock).refreshExecutor(background).build();
        TokenContext trip = newTrip();

        FleetEngineToken first = tokens.fleetEngineToken(trip);
        // The gateway's refreshAfter is 10 minutes before expiry (cache.refreshBefore), kept as a lead on our clock.
        assertEquals(600_000, first.expiresAtMillis() - first.refreshAtMillis());

        clock.set(first.refreshAtMillis() - 1);
        assertSame(first, tokens.fleetEngineToken(trip));
        assertEquals(0, background.size());

        clock.set(first.refreshAtMillis());
        assertSame(first, tokens.fleetEngineToken(trip)); // returned at once, the refresh runs behind it
        assertSame(first, tokens.fleetEngineToken(trip)); // one refresh in flight, not one per call
        assertEquals(1, background.size());
        assertEquals(1, transport.count());

        background.runAll();
        assertEquals(2, transport.count());
        FleetEngineToken refreshed = tokens.peek(trip);
        assertNotNull(refreshed);
        assertEquals(clock.nowMillis(), refreshed.receivedAtMillis());
        assertTrue(refreshed.refreshAtMillis() > clock.nowMillis());
        assertSame(refreshed, tokens.fleetEngineToken(trip));

        // Below the refresh margin (5 minutes) a caller waits for a fresh token rather than getting the old one.
        clock.set(refreshed.expiresAtMillis() - 300_000);
        FleetEngineToken waited = tokens.fleetEngineToken(trip);
        assertEquals(3, transport.count());
        assertEquals(0, background.size());
        assertEquals(clock.nowMillis(), waited.receivedAtMillis());
        assertEquals(trip.id(), Jwt.authorization(waited.token(), gateway.signingKey).get("tripid"));
    }

    @Test
    void aCachedTokenOutlivesAFailedRefreshUntilMinRemaining(Gateway gateway) throws Exception {
        RecordingTransport transport = new RecordingTransport();
        ManualClock clock = new ManualClock(System.currentTimeMillis());
        TokenProvider tokens = fleet(gateway, transport).clock(clock).maxAttempts(2).initialBackoffMillis(1000).build();
        TokenContext trip = newTrip();
        FleetEngineToken first = tokens.fleetEngineToken(trip);

        transport.goOffline(Gateway.unusedPort());
        clock.set(first.expiresAtMillis() - 200_000); // below the margin, above minRemaining (120 s)
        assertSame(first, tokens.fleetEngineToken(trip)); // both attempts refused: the cached token still serves
        assertEquals(3, transport.count());
        assertSame(first, tokens.fleetEngineToken(trip)); // within 30 s of that failure: not asked again
        assertEquals(3, transport.count());

        clock.set(first.expiresAtMillis() - 100_000); // now below minRemaining
        NetworkException offline = assertThrows(NetworkException.class, () -> tokens.fleetEngineToken(trip));
        assertEquals(0, offline.status());
        assertEquals(5, transport.count());

        transport.goOffline(0);
        FleetEngineToken back = tokens.fleetEngineToken(trip);
        assertEquals(6, transport.count());
        assertEquals(clock.nowMillis(), back.receivedAtMillis());
    }

    @Test
    void aPhoneClockADayBehindStillGetsTheTokensTrueLife(Gateway gateway) throws Exception {
        RecordingTransport transport = new RecordingTransport();
        ManualClock clock = new ManualClock(System.currentTimeMillis() - 86_400_000L);
        TokenProvider tokens = fleet(gateway, transport).clock(clock).build();
        FleetEngineToken token = tokens.fleetEngineToken(newTrip());
        long life = token.expiresAtMillis() - clock.nowMillis();
        assertTrue(life > 3_590_000 && life <= 3_600_000, "life on the phone's clock: " + life + " ms");
        assertEquals(token.token(), tokens.token(token.context()));
        assertEquals(1, transport.count());
    }

    @Test
    void anInterruptedWaiterStopsWaitingWhileTheFetchGoesOnForTheOthers(Gateway gateway) throws Exception {
        RecordingTransport transport = new RecordingTransport();
        transport.delayMillis = 1_500;
        TokenProvider tokens = fleet(gateway, transport).build();
        TokenContext trip = newTrip();
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            Future<String> leader = pool.submit(() -> tokens.token(trip));
            while (transport.count() == 0) Thread.sleep(10); // the leader's request is out
            AtomicReference<Thread> waiterThread = new AtomicReference<>();
            Future<String> waiter = pool.submit(() -> {
                waiterThread.set(Thread.currentThread());
                try {
                    return "answered: " + tokens.token(trip).length();
                } catch (CancellationException e) {
                    return Thread.currentThread().isInterrupted() ? "cancelled, interrupt flag kept" : "cancelled, flag lost";
                }
            });
            while (waiterThread.get() == null) Thread.sleep(10);
            Thread.sleep(300); // the waiter is now waiting for the leader's request
            waiterThread.get().interrupt();
            assertEquals("cancelled, interrupt flag kept", waiter.get(10, TimeUnit.SECONDS));
            assertFalse(leader.isDone());
            assertEquals(trip.id(), Jwt.authorization(leader.get(30, TimeUnit.SECONDS), gateway.signingKey).get("tripid"));
            assertEquals(1, transport.count());
            assertNotNull(tokens.peek(trip));
        } finally {
            pool.shutdownNow();
            assertTrue(pool.awaitTermination(10, TimeUnit.SECONDS));
        }
    }

    @Test
    void switchingTripDropsThePreviousTripsToken(Gateway gateway) throws Exception {
        RecordingTransport transport = new RecordingTransport();
        TokenProvider tokens = fleet(gateway, transport).build();
        TokenContext first = newTrip();
        TokenContext second = newTrip();
        TokenContext vehicle = TokenContext.vehicle("vehicle-" + UUID.randomUUID());
        tokens.token(first);
        tokens.token(vehicle);
        tokens.switchTo(second);
        String secondToken = tokens.token(second);
        assertEquals(second.id(), Jwt.authorization(secondToken, gateway.signingKey).get("tripid"));
        assertEquals(new HashSet<>(List.of(second, vehicle)), tokens.cachedContexts()); // other kinds are kept
        assertNull(tokens.peek(first));
        tokens.token(first);
        assertEquals(4, transport.count());
    }

    @Test
    void theLeastRecentlyUsedContextIsDroppedBeyondMaxContexts(Gateway gateway) throws Exception {
        RecordingTransport transport = new RecordingTransport();
        TokenProvider tokens = fleet(gateway, transport).maxContexts(2).build();
        TokenContext a = newTrip();
        TokenContext b = newTrip();
        TokenContext c = newTrip();
        tokens.token(a);
        tokens.token(b);
        tokens.token(a);
        tokens.token(c);
        assertEquals(new HashSet<>(List.of(a, c)), tokens.cachedContexts());
        assertEquals(3, transport.count());
    }

    @Test
    void driverAndDeliveryDriverTokensCarryTheirVehicle(Gateway gateway) throws Exception {
        TokenProvider tokens = fleet(gateway, new RecordingTransport()).build();
        String vehicleId = "vehicle-" + UUID.randomUUID();
        assertEquals(vehicleId, Jwt.authorization(tokens.token(TokenContext.vehicle(vehicleId)), gateway.signingKey).get("vehicleid"));
        String vanId = "van-" + UUID.randomUUID();
        assertEquals(vanId, Jwt.authorization(tokens.token(TokenContext.deliveryVehicle(vanId)), gateway.signingKey)
                .get("deliveryvehicleid"));
        assertEquals(Gateway.SIGNER, Jwt.verifiedClaims(tokens.token(TokenContext.vehicle(vehicleId)), gateway.signingKey).get("iss"));
    }

    @Test
    void theCredentialIsAskedForEveryRequest(Gateway gateway) throws Exception {
        List<String> asked = Collections.synchronizedList(new ArrayList<>());
        TokenProvider tokens = TokenProvider.builder(gateway.url, Gateway.FLEET, () -> {
            asked.add("asked");
            return gateway.appKey;
        }).build();
        tokens.token(newTrip());
        tokens.token(newTrip());
        assertEquals(2, asked.size());
    }

    private interface Ask {
        String ask(int index) throws Exception;
    }

    /** {@code threads} threads released at once, each asking once; their answers in thread order. */
    private static List<String> askConcurrently(int threads, Ask ask) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            CountDownLatch start = new CountDownLatch(1);
            List<Future<String>> futures = new ArrayList<>();
            for (int i = 0; i < threads; i++) {
                int index = i;
                futures.add(pool.submit(() -> {
                    start.await();
                    return ask.ask(index);
                }));
            }
            start.countDown();
            List<String> answers = new ArrayList<>();
            for (Future<String> future : futures) answers.add(future.get(30, TimeUnit.SECONDS));
            return answers;
        } finally {
            pool.shutdownNow();
            assertTrue(pool.awaitTermination(10, TimeUnit.SECONDS));
        }
    }
}
