package dev.tokengate.android;

/**
 * An answer this client cannot use: a 2xx body without a token and a future expiry, a redirect (never followed: the
 * request carries the app's credential), a body over the size cap, or a status with no meaning here. Not retried.
 */
public final class InvalidResponseException extends TokenGateException {
    private static final long serialVersionUID = 1L;

    InvalidResponseException(Details details, String message, Throwable cause) {
        super(Code.INVALID_RESPONSE, details, message, cause);
    }
}
