package dev.tokengate.android;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One fetch of one context: build the URL, ask the credential, send, classify the answer, retry as allowed.
 *
 * <p>Retried: a network failure, a 5xx and a 429, up to {@code maxAttempts} attempts in all, after exponential backoff
 * (0.5 s, 1 s, 2 s …, capped at 8 s, each shortened by up to half at random), or after exactly the answer's
 * {@code Retry-After} when that is at most {@code maxRetryAfterSeconds} (a longer one is surfaced at once). A 401 is
 * retried once, at once and outside that count, when the credential source then returns a different credential.
 * Nothing else is retried. Stateless apart from its settings: threads share one.
 */
final class TokenFetcher {
    private static final long MAX_BACKOFF_MILLIS = 8_000;

    private final String baseUrl;
    private final String providerId;
    private final CredentialSource credentialSource;
    private final HttpTransport transport;
    private final TokenClock clock;
    private final int maxAttempts;
    private final long initialBackoffMillis;
    private final long maxRetryAfterSeconds;

    TokenFetcher(String baseUrl, String providerId, CredentialSource credentialSource, HttpTransport transport,
            TokenClock clock, int maxAttempts, long initialBackoffMillis, long maxRetryAfterSeconds) {
        this.baseUrl = baseUrl;
        this.providerId = providerId;
        this.credentialSource = credentialSource;
        this.transport = transport;
        this.clock = clock;
        this.maxAttempts = maxAttempts;
        this.initialBackoffMillis = initialBackoffMillis;
        this.maxRetryAfterSeconds = maxRetryAfterSeconds;
    }

    /** The URL {@code context}'s token is asked at. */
    String url(TokenContext context) {
        return TokenRequestUrl.of(baseUrl, providerId, context);
    }

    /** {@code context}'s token, or the last failure; {@link InterruptedException} when a wait was interrupted. */
    FleetEngineToken fetch(TokenContext context) throws InterruptedException {
        String url = url(context);
        String credential = credential();
        boolean credentialRenewed = false;
        int attempt = 1;
        while (true) {
            long wait;
            try {
                return attemptOnce(url, credential, context);
            } catch (TokenGateException failure) {
                if (failure.code() == TokenGateException.Code.UNAUTHENTICATED && !credentialRenewed) {
                    credentialRenewed = true;
                    String renewed = credential();
                    if (!renewed.equals(credential)) {
                        credential = renewed; // a refreshed login: worth one more request
                        continue;
                    }
                }
                wait = waitBeforeRetry(failure, attempt);
                if (wait < 0) throw failure;
            }
            clock.sleep(wait);
            attempt++;
            credential = credential();
        }
    }

    /** One request: the token of a 2xx answer, else the failure it stands for, thrown. */
    private FleetEngineToken attemptOnce(String url, String credential, TokenContext context) {
        Map<String, String> headers = new LinkedHashMap<>();
        headers.put("Authorization", "Bearer " + credential);
        headers.put("Accept", "application/json");
        long sentAt = clock.nowMillis();
        TransportResponse response;
        try {
            response = transport.get(url, headers);
        } catch (IOException e) {
            throw new NetworkException(TokenGateException.Details.NONE,
                    "no answer from the gateway (" + e.getClass().getSimpleName() + ")", e);
        }
        if (response.status() < 200 || response.status() > 299) throw TokenResponseParser.failure(response);
        return TokenResponseParser.token(response, context, sentAt, clock.nowMillis());
    }

    /** Milliseconds to wait before attempt {@code attempt + 1}, or -1 to give up and surface {@code failure}. */
    private long waitBeforeRetry(TokenGateException failure, int attempt) {
        if (!failure.isRetryable() || attempt >= maxAttempts) return -1;
        Long retryAfter = failure.retryAfterSeconds();
        if (retryAfter != null) return retryAfter <= maxRetryAfterSeconds ? retryAfter * 1000 : -1;
        long exponential = initialBackoffMillis << Math.min(attempt - 1, 20);
        return (long) (Math.min(MAX_BACKOFF_MILLIS, exponential) * (1 - 0.5 * Math.random()));
    }

    /** The app's credential, checked to be one {@code Authorization: Bearer} value (visible ASCII, no space). */
    private String credential() {
        String credential;
        try {
            credential = credentialSource.credential();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new CredentialUnavailableException(TokenGateException.Details.NONE, "interrupted while asking the credential", e);
        } catch (Exception e) {
            throw new CredentialUnavailableException(TokenGateException.Details.NONE, "the app's credential source failed", e);
        }
        if (credential == null || credential.isEmpty()) {
            throw new CredentialUnavailableException(TokenGateException.Details.NONE, "the app's credential is empty", null);
        }
        for (int i = 0; i < credential.length(); i++) {
            char c = credential.charAt(i);
            if (c <= 0x20 || c >= 0x7F) {
                throw new CredentialUnavailableException(TokenGateException.Details.NONE,
                        "the app's credential has a character a bearer credential cannot hold", null);
            }
        }
        return credential;
    }
}
