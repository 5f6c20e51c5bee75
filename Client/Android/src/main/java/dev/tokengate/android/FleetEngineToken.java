package dev.tokengate.android;

/** A Fleet Engine token as the {@link TokenProvider} caches it, with its deadlines on this device's clock. */
public final class FleetEngineToken {
    private final String token;
    private final TokenContext context;
    private final long receivedAtMillis;
    private final long expiresAtMillis;
    private final long refreshAtMillis;

    FleetEngineToken(String token, TokenContext context, long receivedAtMillis, long expiresAtMillis, long refreshAtMillis) {
        this.token = token;
        this.context = context;
        this.receivedAtMillis = receivedAtMillis;
        this.expiresAtMillis = expiresAtMillis;
        this.refreshAtMillis = refreshAtMillis;
    }

    /** The compact JWS to hand to the SDK. Never log it. */
    public String token() {
        return token;
    }

    /** What the token is for. */
    public TokenContext context() {
        return context;
    }

    /** When this client received it ({@link TokenClock#nowMillis()}). */
    public long receivedAtMillis() {
        return receivedAtMillis;
    }

    /**
     * When it expires on this device's clock: the request's start plus the answer's {@code expiresIn}, less a second
     * (so a device clock that is off does not matter, and the request's round trip is counted against the token).
     */
    public long expiresAtMillis() {
        return expiresAtMillis;
    }

    /** From when a background refresh is started while the token keeps being served (the gateway's {@code refreshAfter}). */
    public long refreshAtMillis() {
        return refreshAtMillis;
    }

    /** Whole seconds of life left at {@code nowMillis}, never negative. */
    public long expiresInSeconds(long nowMillis) {
        return Math.max(0, (expiresAtMillis - nowMillis) / 1000);
    }

    /** The context and deadlines; the token itself is redacted. */
    @Override
    public String toString() {
        return "FleetEngineToken(" + context + ", expiresAtMillis=" + expiresAtMillis + ", refreshAtMillis="
                + refreshAtMillis + ")";
    }
}
