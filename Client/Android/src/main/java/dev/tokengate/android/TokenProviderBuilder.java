package dev.tokengate.android;

import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadFactory;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Where the gateway is, and how a {@link TokenProvider} caches, retries and waits; from
 * {@link TokenProvider#builder(String, String, CredentialSource)}.
 *
 * <pre>{@code
 * TokenProvider tokens = TokenProvider.builder("https://tokens.acme.example", "acme-rides", session::currentIdToken)
 *     .maxAttempts(3)
 *     .build();
 * }</pre>
 */
public final class TokenProviderBuilder {
    final String baseUrl;
    final String providerId;
    final CredentialSource credential;
    TokenClock clock = TokenClock.SYSTEM;
    HttpTransport transport;
    Executor refreshExecutor;
    long refreshMarginSeconds = 300;
    long minRemainingSeconds = 120;
    long backgroundRetryIntervalSeconds = 30;
    int maxContexts = 4;
    int maxAttempts = 3;
    long initialBackoffMillis = 500;
    long maxRetryAfterSeconds = 5;

    TokenProviderBuilder(String baseUrl, String providerId, CredentialSource credential) {
        if (baseUrl == null || providerId == null || credential == null) {
            throw new NullPointerException("baseUrl, providerId and credential are required");
        }
        TokenRequestUrl.checkBaseUrl(baseUrl);
        if (providerId.isEmpty()) throw new IllegalArgumentException("the providerId is empty");
        this.baseUrl = baseUrl;
        this.providerId = providerId;
        this.credential = credential;
    }

    /** "Now" and waits; default {@link TokenClock#SYSTEM}. Tests pass a clock they move by hand. */
    public TokenProviderBuilder clock(TokenClock value) {
        clock = nonNull(value);
        return this;
    }

    /** How requests are sent; default a {@link UrlConnectionTransport} with 10-second timeouts. */
    public TokenProviderBuilder transport(HttpTransport value) {
        transport = nonNull(value);
        return this;
    }

    /**
     * Where background refreshes run; default one daemon thread of the provider's own, ended after 30 idle seconds.
     * An executor that runs tasks inline makes the caller that starts a refresh wait for it.
     */
    public TokenProviderBuilder refreshExecutor(Executor value) {
        refreshExecutor = nonNull(value);
        return this;
    }

    /** Below this much life left, callers wait for a fresh token instead of getting the cached one; default 300. */
    public TokenProviderBuilder refreshMarginSeconds(long value) {
        refreshMarginSeconds = atLeast(0, value, "refreshMarginSeconds");
        return this;
    }

    /**
     * When a fetch fails for any reason but the gateway's refusal (400, 401, 403, 404, 410), a cached token with at least
     * this much life is returned instead; default 120.
     */
    public TokenProviderBuilder minRemainingSeconds(long value) {
        minRemainingSeconds = atLeast(0, value, "minRemainingSeconds");
        return this;
    }

    /** After a fetch, the least time before the same context's next one while a cached token serves; default 30. */
    public TokenProviderBuilder backgroundRetryIntervalSeconds(long value) {
        backgroundRetryIntervalSeconds = atLeast(0, value, "backgroundRetryIntervalSeconds");
        return this;
    }

    /** The most contexts cached at once; the least recently used is dropped beyond it. Default 4. */
    public TokenProviderBuilder maxContexts(int value) {
        maxContexts = (int) atLeast(1, value, "maxContexts");
        return this;
    }

    /** Attempts in all for network failures, 5xx and 429 (the first included); default 3, as the other clients. */
    public TokenProviderBuilder maxAttempts(int value) {
        maxAttempts = (int) atLeast(1, value, "maxAttempts");
        return this;
    }

    /** The backoff before the first retry, doubled for each next one (capped at 8 s, with jitter); default 500. */
    public TokenProviderBuilder initialBackoffMillis(long value) {
        initialBackoffMillis = atLeast(0, value, "initialBackoffMillis");
        return this;
    }

    /**
     * The longest {@code Retry-After} (429, 503) waited for before a retry; a longer one is surfaced at once. Default
     * 5: the SDK's location updates wait while {@link TokenProvider#token(TokenContext)} does.
     */
    public TokenProviderBuilder maxRetryAfterSeconds(long value) {
        maxRetryAfterSeconds = atLeast(0, value, "maxRetryAfterSeconds");
        return this;
    }

    /** The provider. */
    public TokenProvider build() {
        if (transport == null) transport = new UrlConnectionTransport();
        if (refreshExecutor == null) refreshExecutor = defaultRefreshExecutor();
        return new TokenProvider(this);
    }

    private static Executor defaultRefreshExecutor() {
        ThreadPoolExecutor executor = new ThreadPoolExecutor(1, 1, 30, TimeUnit.SECONDS,
                new LinkedBlockingQueue<Runnable>(), new ThreadFactory() {
                    @Override
                    public Thread newThread(Runnable runnable) {
                        Thread thread = new Thread(runnable, "tokengate-refresh");
                        thread.setDaemon(true);
                        return thread;
                    }
                });
        executor.allowCoreThreadTimeOut(true);
        return executor;
    }

    private static <T> T nonNull(T value) {
        if (value == null) throw new NullPointerException();
        return value;
    }

    private static long atLeast(long minimum, long value, String name) {
        if (value < minimum) throw new IllegalArgumentException(name + " must be at least " + minimum);
        return value;
    }
}
