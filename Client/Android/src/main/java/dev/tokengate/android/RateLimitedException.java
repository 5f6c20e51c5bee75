package dev.tokengate.android;

/**
 * 429 {@code rate_limited}: a provider, caller, context or distinct-contexts limit of the gateway.
 *
 * <p>A {@code Retry-After} of at most {@link TokenProviderBuilder#maxRetryAfterSeconds(long)} is waited for and the
 * request retried; a longer one is surfaced at once with {@link #retryAfterSeconds()}, and the context is not asked
 * for again before it has passed (a cached token with enough life left is returned meanwhile).
 */
public final class RateLimitedException extends TokenGateException {
    private static final long serialVersionUID = 1L;

    RateLimitedException(Details details, String message, Throwable cause) {
        super(Code.RATE_LIMITED, details, message, cause);
    }
}
