package dev.tokengate.android;

/**
 * A failure to obtain a Fleet Engine token, classified from the gateway's status and stable error code.
 *
 * <p>Unchecked, so it passes through the Mobility SDKs' {@code AuthTokenFactory.getToken}, which declares none: the
 * SDK hands it to the app's error listener. Catch a subclass, or switch on {@link #code()}; never on the message:
 *
 * <pre>{@code
 * try {
 *     String jwt = tokens.token(TokenContext.trip(tripId));
 * } catch (UnauthenticatedException e) {
 *     showSignIn();                       // the gateway refused the user's session token
 * } catch (ContextEndedException e) {
 *     showTripOver();                     // an operator ended the trip: no new tokens for it
 * }
 * }</pre>
 *
 * <table>
 *   <caption>Subclasses</caption>
 *   <tr><th>class</th><th>code</th><th>when</th></tr>
 *   <tr><td>{@link UnauthenticatedException}</td><td>UNAUTHENTICATED</td><td>401</td></tr>
 *   <tr><td>{@link ForbiddenException}</td><td>FORBIDDEN</td><td>403</td></tr>
 *   <tr><td>{@link ContextEndedException}</td><td>CONTEXT_ENDED</td><td>410 {@code context_ended}</td></tr>
 *   <tr><td>{@link RateLimitedException}</td><td>RATE_LIMITED</td><td>429</td></tr>
 *   <tr><td>{@link BackendUnavailableException}</td><td>BACKEND_UNAVAILABLE</td><td>any 5xx</td></tr>
 *   <tr><td>{@link NotFoundException}</td><td>NOT_FOUND</td><td>404: unknown provider or token type</td></tr>
 *   <tr><td>{@link NoTokenForContextException}</td><td>NO_TOKEN_FOR_CONTEXT</td><td>404 {@code no_token_for_context}</td></tr>
 *   <tr><td>{@link InvalidRequestException}</td><td>INVALID_REQUEST</td><td>400, or refused here (an empty ID)</td></tr>
 *   <tr><td>{@link InvalidResponseException}</td><td>INVALID_RESPONSE</td><td>an unusable 2xx body, or another status</td></tr>
 *   <tr><td>{@link NetworkException}</td><td>NETWORK</td><td>no answer: offline, refused, TLS, timeout</td></tr>
 *   <tr><td>{@link CredentialUnavailableException}</td><td>CREDENTIAL_UNAVAILABLE</td><td>the app's
 *       {@link CredentialSource} failed or gave nothing</td></tr>
 * </table>
 */
public abstract class TokenGateException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** What went wrong, one value per subclass. */
    public enum Code {
        /** 401: the app's credential was refused; re-authenticate the user. */
        UNAUTHENTICATED,
        /** 403: the caller may not have a token for this type, trip or vehicle. */
        FORBIDDEN,
        /** 410: an operator ended the trip, vehicle, task or shipment. */
        CONTEXT_ENDED,
        /** 429: a rate limit of the gateway; {@link #retryAfterSeconds()} says when to come back. */
        RATE_LIMITED,
        /** 5xx: the gateway or its token backend failed, timed out or is not being called for now. */
        BACKEND_UNAVAILABLE,
        /** 404: unknown provider or token type: a configuration mistake in the app or the gateway. */
        NOT_FOUND,
        /** 404 {@code no_token_for_context}: a {@code file} backend holds no token for this trip or vehicle. */
        NO_TOKEN_FOR_CONTEXT,
        /** 400, or a request this client refuses to send (an empty ID, an ID that is not valid UTF-16). */
        INVALID_REQUEST,
        /** An answer this client cannot use: a 2xx without a token and expiry, a 3xx, another status. */
        INVALID_RESPONSE,
        /** No HTTP answer at all: offline, DNS, connection refused, TLS, timeout. */
        NETWORK,
        /** The app's {@link CredentialSource} threw, or returned nothing usable as a bearer credential. */
        CREDENTIAL_UNAVAILABLE;

        /** Whether asking again later can succeed: network failures, 5xx and 429. */
        public boolean isRetryable() {
            return this == NETWORK || this == BACKEND_UNAVAILABLE || this == RATE_LIMITED;
        }
    }

    private final Code code;
    private final int status;
    private final String serverCode;
    private final Long retryAfterSeconds;
    private final String requestId;

    TokenGateException(Code code, Details details, String message, Throwable cause) {
        super(message, cause);
        this.code = code;
        this.status = details.status;
        this.serverCode = details.serverCode;
        this.retryAfterSeconds = details.retryAfterSeconds;
        this.requestId = details.requestId;
    }

    /** The classification to branch on. */
    public Code code() {
        return code;
    }

    /** The HTTP status of the gateway's answer, 0 when there was none. */
    public int status() {
        return status;
    }

    /** The gateway's stable code from {@code {"error":{"code":…}}} (e.g. {@code backend_timeout}), or null. */
    public String serverCode() {
        return serverCode;
    }

    /** Seconds to wait before asking again, from {@code Retry-After} (429, some 503s), or null. */
    public Long retryAfterSeconds() {
        return retryAfterSeconds;
    }

    /** The answer's {@code X-Request-ID}, to find the request in the gateway's log, or null. */
    public String requestId() {
        return requestId;
    }

    /** Whether asking again later can succeed: {@link Code#isRetryable()}. */
    public boolean isRetryable() {
        return code.isRetryable();
    }

    /** The same failure as a new exception (its own stack trace) caused by this one: for each caller that waited. */
    TokenGateException copyFor(String message) {
        return create(code, new Details(status, serverCode, retryAfterSeconds, requestId), message, this);
    }

    Details details() {
        return new Details(status, serverCode, retryAfterSeconds, requestId);
    }

    /** The exception class for {@code code}. */
    static TokenGateException create(Code code, Details details, String message, Throwable cause) {
        switch (code) {
            case UNAUTHENTICATED: return new UnauthenticatedException(details, message, cause);
            case FORBIDDEN: return new ForbiddenException(details, message, cause);
            case CONTEXT_ENDED: return new ContextEndedException(details, message, cause);
            case RATE_LIMITED: return new RateLimitedException(details, message, cause);
            case BACKEND_UNAVAILABLE: return new BackendUnavailableException(details, message, cause);
            case NOT_FOUND: return new NotFoundException(details, message, cause);
            case NO_TOKEN_FOR_CONTEXT: return new NoTokenForContextException(details, message, cause);
            case INVALID_REQUEST: return new InvalidRequestException(details, message, cause);
            case INVALID_RESPONSE: return new InvalidResponseException(details, message, cause);
            case NETWORK: return new NetworkException(details, message, cause);
            case CREDENTIAL_UNAVAILABLE: return new CredentialUnavailableException(details, message, cause);
            default: throw new AssertionError(code);
        }
    }

    /** What the gateway's answer said besides its status class: all optional. */
    static final class Details {
        static final Details NONE = new Details(0, null, null, null);

        final int status;
        final String serverCode;
        final Long retryAfterSeconds;
        final String requestId;

        Details(int status, String serverCode, Long retryAfterSeconds, String requestId) {
            this.status = status;
            this.serverCode = serverCode;
            this.retryAfterSeconds = retryAfterSeconds;
            this.requestId = requestId;
        }

        Details withRetryAfter(Long seconds) {
            return new Details(status, serverCode, seconds, requestId);
        }
    }
}
