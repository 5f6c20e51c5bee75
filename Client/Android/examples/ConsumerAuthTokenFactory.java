// The Consumer SDK's (journey sharing, Android) token factory, backed by TokenGate.
//
// Source for the app to compile, not compiled here: Google's Consumer SDK is not redistributable, so neither
// Client/Android/test.sh nor CI has its classes. What it calls, TokenProvider, is the tested part. Copy this file into
// the rider app (rename its package) next to the library (docs/client.md, "On Android").
package dev.tokengate.android.examples;

import com.google.android.libraries.mapsplatform.transportation.consumer.auth.AuthTokenContext;
import com.google.android.libraries.mapsplatform.transportation.consumer.auth.AuthTokenFactory;
import dev.tokengate.android.TokenContext;
import dev.tokengate.android.TokenProvider;

/**
 * The Consumer SDK's {@link AuthTokenFactory}: a consumer token for the trip the SDK names.
 *
 * <pre>{@code
 * TokenProvider tokens = TokenProvider.builder("https://tokens.acme.example", "acme-rides",
 *         () -> session.currentIdToken()).build();
 * ConsumerApi.initialize(activity, "acme-rides", new ConsumerAuthTokenFactory(tokens));
 * }</pre>
 *
 * <p>The SDK calls {@link #getToken} on a background thread, for its TripService with the shared trip's ID
 * ({@link AuthTokenContext#getTripId()}), and for its VehicleService (nearby vehicles) with none: Fleet Engine needs
 * no vehicle claim there, so the current trip's token serves. A new trip ID drops the previous trip's token. Errors
 * are {@link dev.tokengate.android.TokenGateException}s (unchecked), which the SDK passes to its error listener.
 */
public final class ConsumerAuthTokenFactory implements AuthTokenFactory {
    private final TokenProvider tokens;
    private volatile String currentTripId;

    public ConsumerAuthTokenFactory(TokenProvider tokens) {
        this.tokens = tokens;
    }

    @Override
    public String getToken(AuthTokenContext context) {
        String tripId = context == null ? null : context.getTripId();
        if (tripId == null || tripId.isEmpty()) {
            String current = currentTripId;
            if (current == null) throw new IllegalStateException("the Consumer SDK asked for a token before sharing any trip");
            return tokens.token(TokenContext.trip(current));
        }
        TokenContext trip = TokenContext.trip(tripId);
        tokens.switchTo(trip);
        currentTripId = tripId;
        return tokens.token(trip);
    }
}
