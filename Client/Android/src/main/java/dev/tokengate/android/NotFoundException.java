package dev.tokengate.android;

/**
 * 404: no such provider ({@code unknown_provider}) or the provider issues no such token type
 * ({@code unknown_token_type}), a configuration mistake in the app or the gateway. Never retried.
 */
public final class NotFoundException extends TokenGateException {
    private static final long serialVersionUID = 1L;

    NotFoundException(Details details, String message, Throwable cause) {
        super(Code.NOT_FOUND, details, message, cause);
    }
}
