package dev.tokengate.android;

/**
 * 410 {@code context_ended}: an operator (or Fleet Engine's own events) ended this trip, vehicle, task or shipment.
 *
 * <p>Never retried, and remembered: the {@link TokenProvider} drops the context's cached token and refuses it
 * without a request until {@link TokenProvider#clear(TokenContext)} or {@link TokenProvider#clearAll()}.
 */
public final class ContextEndedException extends TokenGateException {
    private static final long serialVersionUID = 1L;

    ContextEndedException(Details details, String message, Throwable cause) {
        super(Code.CONTEXT_ENDED, details, message, cause);
    }
}
