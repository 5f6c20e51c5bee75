package dev.tokengate.android;

/**
 * Any 5xx: the gateway's token backend failed ({@code backend_error}, {@code backend_invalid_token}), timed out
 * ({@code backend_timeout}) or is not being called for now ({@code backend_unavailable}, often with
 * {@code Retry-After}); {@link #serverCode()} says which. Retried with backoff; meanwhile a cached token with enough
 * life left is returned.
 */
public final class BackendUnavailableException extends TokenGateException {
    private static final long serialVersionUID = 1L;

    BackendUnavailableException(Details details, String message, Throwable cause) {
        super(Code.BACKEND_UNAVAILABLE, details, message, cause);
    }
}
