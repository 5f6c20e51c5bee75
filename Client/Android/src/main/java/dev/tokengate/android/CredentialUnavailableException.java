package dev.tokengate.android;

/**
 * The app's {@link CredentialSource} threw ({@link #getCause()}), returned null or an empty string, or returned
 * something that cannot travel in an {@code Authorization} header (a control character, a space, non-ASCII).
 */
public final class CredentialUnavailableException extends TokenGateException {
    private static final long serialVersionUID = 1L;

    CredentialUnavailableException(Details details, String message, Throwable cause) {
        super(Code.CREDENTIAL_UNAVAILABLE, details, message, cause);
    }
}
