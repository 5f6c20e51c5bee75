package dev.tokengate.android;

/**
 * No HTTP answer: offline, DNS, connection refused, TLS, or a timeout ({@link #getCause()} is the
 * {@link java.io.IOException}). Retried with backoff; meanwhile a cached token with enough life left is returned.
 */
public final class NetworkException extends TokenGateException {
    private static final long serialVersionUID = 1L;

    NetworkException(Details details, String message, Throwable cause) {
        super(Code.NETWORK, details, message, cause);
    }
}
