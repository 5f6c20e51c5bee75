package dev.tokengate.android;

/**
 * 403 {@code forbidden}: the caller may not have this token type, or this trip or vehicle. Never retried; the
 * context's cached token is dropped.
 */
public final class ForbiddenException extends TokenGateException {
    private static final long serialVersionUID = 1L;

    ForbiddenException(Details details, String message, Throwable cause) {
        super(Code.FORBIDDEN, details, message, cause);
    }
}
