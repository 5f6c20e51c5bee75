// The Driver SDK's (on-demand rides, Android) token factory, backed by TokenGate.
//
// Source for the app to compile, not compiled here: Google's Driver SDK is not redistributable, so neither
// Client/Android/test.sh nor CI has its classes. What it calls, TokenProvider, is the tested part. Copy this file into
// the driver app (rename its package) next to the library (docs/client.md, "On Android").
package dev.tokengate.android.examples;

import com.google.android.libraries.mapsplatform.transportation.driver.api.base.data.AuthTokenContext;
import com.google.android.libraries.mapsplatform.transportation.driver.api.base.data.AuthTokenContext.AuthTokenFactory;
import dev.tokengate.android.TokenContext;
import dev.tokengate.android.TokenProvider;

/**
 * The Driver SDK's {@link AuthTokenFactory} (nested in {@link AuthTokenContext}): a driver token for the vehicle the
 * SDK names ({@link AuthTokenContext#getVehicleId()}).
 *
 * <pre>{@code
 * TokenProvider tokens = TokenProvider.builder("https://tokens.acme.example", "acme-rides",
 *         () -> session.currentIdToken()).build();
 * RidesharingDriverApi driverApi = RidesharingDriverApi.createInstance(DriverContext.builder(application)
 *         .setProviderId("acme-rides")
 *         .setVehicleId(vehicleId)
 *         .setAuthTokenFactory(new DriverAuthTokenFactory(tokens))
 *         .setNavigator(navigator)
 *         .setRoadSnappedLocationProvider(NavigationApi.getRoadSnappedLocationProvider(application))
 *         .build());
 * }</pre>
 *
 * <p>The SDK calls {@link #getToken} at every location update, on its own background threads, several at once: the
 * provider returns the cached token, makes one request for all of them, and refreshes ahead of expiry. A driver who
 * switches vehicles gets a new vehicle ID, and the previous vehicle's token is dropped.
 */
public final class DriverAuthTokenFactory implements AuthTokenFactory {
    private final TokenProvider tokens;

    public DriverAuthTokenFactory(TokenProvider tokens) {
        this.tokens = tokens;
    }

    @Override
    public String getToken(AuthTokenContext context) {
        String vehicleId = context == null ? null : context.getVehicleId();
        if (vehicleId == null || vehicleId.isEmpty()) throw new IllegalStateException("the Driver SDK gave no vehicle ID");
        TokenContext vehicle = TokenContext.vehicle(vehicleId);
        tokens.switchTo(vehicle);
        return tokens.token(vehicle);
    }
}
