package dev.tokengate.android;

/**
 * 404 {@code no_token_for_context}: the provider issues this token type, but its {@code file} backend holds no
 * (unexpired) token for this trip or vehicle. Never retried: it stays so until an operator adds one.
 */
public final class NoTokenForContextException extends TokenGateException {
    private static final long serialVersionUID = 1L;

    NoTokenForContextException(Details details, String message, Throwable cause) {
        super(Code.NO_TOKEN_FOR_CONTEXT, details, message, cause);
    }
}
