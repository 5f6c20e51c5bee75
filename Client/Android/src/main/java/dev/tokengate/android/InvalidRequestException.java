package dev.tokengate.android;

/**
 * 400 {@code invalid_request}, or a request this client refuses to send: an empty ID, an empty task in a batch, an
 * ID that is not valid UTF-16 (an unpaired surrogate), a base URL that is not {@code http(s)}. Never retried.
 */
public final class InvalidRequestException extends TokenGateException {
    private static final long serialVersionUID = 1L;

    InvalidRequestException(Details details, String message, Throwable cause) {
        super(Code.INVALID_REQUEST, details, message, cause);
    }
}
