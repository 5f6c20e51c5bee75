package dev.tokengate.android;

/**
 * 401 {@code unauthenticated}: the gateway refused the app's credential (no, wrong, expired or revoked).
 *
 * <p>Retried once, at once, when the {@link CredentialSource} then returns a different credential (a refreshed login);
 * otherwise surfaced: sign the user in again. The context's cached token is dropped.
 */
public final class UnauthenticatedException extends TokenGateException {
    private static final long serialVersionUID = 1L;

    UnauthenticatedException(Details details, String message, Throwable cause) {
        super(Code.UNAUTHENTICATED, details, message, cause);
    }
}
