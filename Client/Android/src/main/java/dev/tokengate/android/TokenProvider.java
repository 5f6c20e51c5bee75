package dev.tokengate.android;

import java.util.HashSet;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.Executor;
import java.util.concurrent.RejectedExecutionException;

/**
 * Hands out Fleet Engine tokens from a TokenGate gateway: cached per context, refreshed ahead of expiry, fetched once
 * however many threads ask, retried within bounds, and typed on failure. The Android counterpart of the Swift
 * client's {@code TokenProvider}; the Mobility SDKs' {@code AuthTokenFactory} adapters call it (docs/client.md).
 *
 * <pre>{@code
 * TokenProvider tokens = TokenProvider.builder("https://tokens.acme.example", "acme-rides",
 *         () -> session.currentIdToken())          // the signed-in user's session token, asked per request
 *     .build();
 * String jwt = tokens.token(TokenContext.vehicle("vehicle-7"));   // blocking: call it off the main thread
 * }</pre>
 *
 * <p>Per context:
 * <ul>
 *   <li>A token is returned without a request until its {@code refreshAfter} (the gateway's, on this device's clock).
 *   <li>From then until {@code refreshMarginSeconds} (300) before expiry, the cached token is still returned at once
 *       and one background refresh starts on the refresh executor; a failed one is tried again no sooner than
 *       {@code backgroundRetryIntervalSeconds} (30) later.
 *   <li>Below the margin, callers wait for a fresh token. If that fetch fails for any reason but a refusal (network,
 *       5xx, 429, an unusable answer, the credential source) and the cached token still has {@code minRemainingSeconds}
 *       (120) of life, it is returned instead. Only network failures, 5xx and 429 are retried first.
 *   <li>One request per context is in flight at a time: every thread that needs it waits for that one.
 *   <li>The gateway's refusals (400, 401, 403, 404) drop the cached token; 410 drops it and is remembered: the context
 *       is refused without a request until {@link #clear(TokenContext)} or {@link #clearAll()}. A 429's
 *       {@code Retry-After} stops requests for the context until it has passed (the cached token still served while it
 *       has {@code minRemainingSeconds} left). The Swift and browser clients do the same (docs/client.md).
 *   <li>At most {@code maxContexts} (4) contexts are kept, the least recently used dropped first;
 *       {@link #switchTo(TokenContext)} drops the previous trip's or vehicle's token. A fetch in flight for a dropped
 *       context still answers its callers but is not cached.
 * </ul>
 *
 * <p>Thread-safe. Blocking: {@link #token(TokenContext)} may wait for the network, bounded by the transport's timeouts,
 * {@code maxAttempts} and {@code maxRetryAfterSeconds}; never call it on the main thread. Interrupting a waiting thread
 * makes it throw {@link CancellationException} (its interrupt flag set); the fetch goes on for the others.
 */
public final class TokenProvider {
    private static final int MAX_ENDED_CONTEXTS = 256;

    private final TokenFetcher fetcher;
    private final TokenClock clock;
    private final Executor refreshExecutor;
    private final long refreshMarginMillis;
    private final long minRemainingMillis;
    private final long backgroundRetryMillis;
    private final int maxContexts;

    private final Object lock = new Object();
    /** Guarded by {@code lock}; access-ordered, so the first entry is the least recently used. */
    private final LinkedHashMap<TokenContext, Entry> entries = new LinkedHashMap<>(8, 0.75f, true);
    /** Guarded by {@code lock}: contexts answered 410, the oldest forgotten beyond {@link #MAX_ENDED_CONTEXTS}. */
    private final LinkedHashMap<TokenContext, ContextEndedException> ended =
            new LinkedHashMap<TokenContext, ContextEndedException>(8, 0.75f, false) {
                private static final long serialVersionUID = 1L;

                @Override
                protected boolean removeEldestEntry(Map.Entry<TokenContext, ContextEndedException> eldest) {
                    return size() > MAX_ENDED_CONTEXTS;
                }
            };

    TokenProvider(TokenProviderBuilder builder) {
        this.clock = builder.clock;
        this.refreshExecutor = builder.refreshExecutor;
        this.refreshMarginMillis = builder.refreshMarginSeconds * 1000;
        this.minRemainingMillis = builder.minRemainingSeconds * 1000;
        this.backgroundRetryMillis = builder.backgroundRetryIntervalSeconds * 1000;
        this.maxContexts = builder.maxContexts;
        this.fetcher = new TokenFetcher(builder.baseUrl, builder.providerId, builder.credential, builder.transport,
                builder.clock, builder.maxAttempts, builder.initialBackoffMillis, builder.maxRetryAfterSeconds);
    }

    /** A builder for the gateway at {@code baseUrl} serving provider {@code providerId}, with {@code credential}. */
    public static TokenProviderBuilder builder(String baseUrl, String providerId, CredentialSource credential) {
        return new TokenProviderBuilder(baseUrl, providerId, credential);
    }

    /** The JWT for {@code context}: the cached one, or a fresh one fetched once for every waiting thread. */
    public String token(TokenContext context) {
        return fleetEngineToken(context).token();
    }

    /** Like {@link #token(TokenContext)}, with the token's context and deadlines. */
    public FleetEngineToken fleetEngineToken(TokenContext context) {
        return obtain(context, false);
    }

    /**
     * Fetches a fresh token for {@code context} now (joining a fetch already in flight) and caches it; throws what the
     * fetch threw, never falling back to the cached token. An ended context, or one cooling down after a 429, is
     * refused without a request.
     */
    public FleetEngineToken refresh(TokenContext context) {
        return obtain(context, true);
    }

    /**
     * The app now works on {@code context}: drops every other cached context of the same kind (the previous trip or
     * vehicle), keeping other kinds. The SDK adapters call it before each {@link #token(TokenContext)}.
     */
    public void switchTo(TokenContext context) {
        synchronized (lock) {
            Iterator<TokenContext> keys = entries.keySet().iterator();
            while (keys.hasNext()) {
                TokenContext key = keys.next();
                if (key.kind() == context.kind() && !key.equals(context)) keys.remove();
            }
        }
    }

    /** Drops {@code context}'s cached token, and forgets that it ended or is rate limited. */
    public void clear(TokenContext context) {
        synchronized (lock) {
            entries.remove(context);
            ended.remove(context);
        }
    }

    /** Drops every cached token and everything remembered (sign-out). */
    public void clearAll() {
        synchronized (lock) {
            entries.clear();
            ended.clear();
        }
    }

    /** {@code context}'s cached token, or null; never sends a request. */
    public FleetEngineToken peek(TokenContext context) {
        synchronized (lock) {
            Entry entry = entries.get(context);
            return entry == null ? null : entry.token;
        }
    }

    /** The contexts that hold a cached token now. */
    public Set<TokenContext> cachedContexts() {
        synchronized (lock) {
            Set<TokenContext> cached = new HashSet<>();
            for (Map.Entry<TokenContext, Entry> entry : entries.entrySet()) {
                if (entry.getValue().token != null) cached.add(entry.getKey());
            }
            return cached;
        }
    }

    /** The URL {@code context}'s token is asked at (its IDs percent-encoded); {@link InvalidRequestException} if none. */
    public String requestUrl(TokenContext context) {
        return fetcher.url(context);
    }

    private FleetEngineToken obtain(TokenContext context, boolean force) {
        fetcher.url(context); // an empty or unencodable ID is refused before it takes a cache slot
        while (true) {
            Plan plan;
            synchronized (lock) {
                plan = plan(context, force, clock.nowMillis());
            }
            if (plan.step == Step.ANSWER) return plan.cached;
            if (plan.step == Step.REFRESH_BEHIND) {
                startInBackground(context, plan.flight);
                return plan.cached;
            }
            boolean leading = plan.step == Step.LEAD;
            Flight.Outcome outcome = leading ? run(context, plan.flight) : await(plan.flight);
            if (outcome.token != null) return outcome.token;
            if (outcome.failure == null) {
                if (leading) throw interrupted();
                continue; // the fetch this thread waited for was abandoned: ask again, maybe leading this time
            }
            TokenGateException failure = leading ? outcome.failure : outcome.failure.copyFor(outcome.failure.getMessage());
            if (!force && !isRefusal(failure) && plan.cached != null && isStillCached(context, plan.cached)) {
                return plan.cached;
            }
            throw failure;
        }
    }

    /** What a caller does now; under {@code lock}, so it sees and changes the context's slot in one step. */
    private Plan plan(TokenContext context, boolean force, long now) {
        ContextEndedException endedFailure = ended.get(context);
        if (endedFailure != null) throw endedFailure.copyFor(endedFailure.getMessage() + " (remembered: no request sent)");
        Entry entry = entryFor(context);
        FleetEngineToken cached = entry.token;
        if (!force && cached != null) {
            if (now < cached.refreshAtMillis()) return new Plan(Step.ANSWER, cached, null);
            if (now < cached.expiresAtMillis() - refreshMarginMillis) {
                boolean paced = now < entry.retryNotBefore || now < entry.coolingUntil;
                if (entry.flight != null || paced) return new Plan(Step.ANSWER, cached, null);
                return new Plan(Step.REFRESH_BEHIND, cached, entry.flight = new Flight());
            }
            // Fetched or failed a moment ago: a usable token is not asked for again at every call.
            if (now < entry.retryNotBefore && isUsable(cached, now)) return new Plan(Step.ANSWER, cached, null);
        }
        if (entry.flight != null) return new Plan(Step.JOIN, cached, entry.flight);
        if (now < entry.coolingUntil) {
            if (!force && cached != null && isUsable(cached, now)) return new Plan(Step.ANSWER, cached, null);
            throw coolingDown(entry, now);
        }
        return new Plan(Step.LEAD, cached, entry.flight = new Flight());
    }

    /** The entry for {@code context}, created if needed, dropping the least recently used beyond {@code maxContexts}. */
    private Entry entryFor(TokenContext context) {
        Entry entry = entries.get(context);
        if (entry != null) return entry;
        entry = new Entry();
        entries.put(context, entry);
        Iterator<TokenContext> eldest = entries.keySet().iterator();
        while (entries.size() > maxContexts && eldest.hasNext()) {
            if (!eldest.next().equals(context)) eldest.remove();
        }
        return entry;
    }

    private boolean isUsable(FleetEngineToken token, long now) {
        return token.expiresAtMillis() - now >= minRemainingMillis;
    }

    /** Whether {@code token} is still {@code context}'s cached token and has enough life to hand out after a failure. */
    private boolean isStillCached(TokenContext context, FleetEngineToken token) {
        synchronized (lock) {
            Entry entry = entries.get(context);
            return entry != null && entry.token == token && isUsable(token, clock.nowMillis());
        }
    }

    private void startInBackground(final TokenContext context, final Flight flight) {
        try {
            refreshExecutor.execute(new Runnable() {
                @Override
                public void run() {
                    TokenProvider.this.run(context, flight);
                }
            });
        } catch (RejectedExecutionException e) {
            finish(context, flight, Flight.Outcome.ABANDONED);
        }
    }

    /** Fetches as {@code flight}'s leader, records the outcome, then wakes every thread waiting for it. */
    private Flight.Outcome run(TokenContext context, Flight flight) {
        Flight.Outcome outcome = Flight.Outcome.ABANDONED;
        try {
            outcome = new Flight.Outcome(fetcher.fetch(context), null);
        } catch (TokenGateException failure) {
            outcome = new Flight.Outcome(null, failure);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            // Anything else (a bug, a transport's unexpected exception) propagates here, while the waiters, told the
            // fetch was abandoned, ask again themselves instead of waiting forever.
            finish(context, flight, outcome);
        }
        return outcome;
    }

    /** Caches {@code outcome} unless the context was cleared, dropped or switched away from meanwhile. */
    private void finish(TokenContext context, Flight flight, Flight.Outcome outcome) {
        synchronized (lock) {
            Entry entry = entries.get(context);
            if (entry != null && entry.flight == flight) {
                entry.flight = null;
                record(context, entry, outcome);
            }
        }
        flight.complete(outcome);
    }

    private void record(TokenContext context, Entry entry, Flight.Outcome outcome) {
        long now = clock.nowMillis();
        if (outcome.token != null) {
            entry.token = outcome.token;
            entry.coolingUntil = 0;
            entry.retryNotBefore = now + backgroundRetryMillis;
            return;
        }
        if (outcome.failure == null) return; // abandoned: says nothing about the gateway
        TokenGateException failure = outcome.failure;
        entry.retryNotBefore = now + backgroundRetryMillis;
        if (failure instanceof ContextEndedException) {
            entries.remove(context);
            ended.put(context, (ContextEndedException) failure);
            return;
        }
        if (isRefusal(failure)) entry.token = null;
        if (failure instanceof RateLimitedException && failure.retryAfterSeconds() != null) {
            entry.coolingUntil = now + failure.retryAfterSeconds() * 1000;
            entry.coolingFailure = failure;
        }
    }

    /**
     * The gateway said no to this caller for this context (400, 401, 403, 404, 410): its cached token must not be handed
     * out any more. Any other failure leaves it in service while it has {@code minRemainingSeconds}.
     */
    private static boolean isRefusal(TokenGateException failure) {
        switch (failure.code()) {
            case CONTEXT_ENDED:
            case UNAUTHENTICATED:
            case FORBIDDEN:
            case NOT_FOUND:
            case NO_TOKEN_FOR_CONTEXT:
            case INVALID_REQUEST:
                return true;
            default:
                return false;
        }
    }

    private static RateLimitedException coolingDown(Entry entry, long now) {
        long left = (entry.coolingUntil - now + 999) / 1000;
        TokenGateException cause = entry.coolingFailure;
        return new RateLimitedException(cause.details().withRetryAfter(left),
                "rate limited: not asking again before Retry-After has passed", cause);
    }

    private static Flight.Outcome await(Flight flight) {
        try {
            return flight.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw interrupted();
        }
    }

    private static CancellationException interrupted() {
        return new CancellationException("interrupted while waiting for a Fleet Engine token");
    }

    /** One context's cache slot. Every field is guarded by {@code lock}. */
    private static final class Entry {
        FleetEngineToken token;
        Flight flight;
        long retryNotBefore;
        long coolingUntil;
        TokenGateException coolingFailure;
    }

    /** The next step of a caller: answer the cached token, also refresh it behind, join a fetch, or lead one. */
    private enum Step { ANSWER, REFRESH_BEHIND, JOIN, LEAD }

    private static final class Plan {
        final Step step;
        final FleetEngineToken cached;
        final Flight flight;

        Plan(Step step, FleetEngineToken cached, Flight flight) {
            this.step = step;
            this.cached = cached;
            this.flight = flight;
        }
    }
}
