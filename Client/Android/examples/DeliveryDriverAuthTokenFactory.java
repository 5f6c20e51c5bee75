// The Driver SDK's token factory for last-mile delivery (DeliveryDriverApi, Android), backed by TokenGate.
//
// Source for the app to compile, not compiled here: Google's Driver SDK is not redistributable, so neither
// Client/Android/test.sh nor CI has its classes. What it calls, TokenProvider, is the tested part. Copy this file into
// the delivery driver app (rename its package) next to the library (docs/client.md, "On Android").
package dev.tokengate.android.examples;

import com.google.android.libraries.mapsplatform.transportation.driver.api.base.data.AuthTokenContext;
import com.google.android.libraries.mapsplatform.transportation.driver.api.base.data.AuthTokenContext.AuthTokenFactory;
import dev.tokengate.android.TokenContext;
import dev.tokengate.android.TokenProvider;

/**
 * The delivery Driver SDK's {@link AuthTokenFactory}: an untrusted delivery driver's token
 * ({@code delivery-driver}, claim {@code deliveryvehicleid}) for the delivery vehicle the SDK names
 * ({@link AuthTokenContext#getVehicleId()}).
 *
 * <pre>{@code
 * DeliveryDriverApi.createInstance(DriverContext.builder(application)
 *         .setProviderId("acme-deliveries")
 *         .setVehicleId(deliveryVehicleId)
 *         .setAuthTokenFactory(new DeliveryDriverAuthTokenFactory(tokens))
 *         .setNavigator(navigator)
 *         .setRoadSnappedLocationProvider(NavigationApi.getRoadSnappedLocationProvider(application))
 *         .build());
 * }</pre>
 *
 * <p>A managed device of a trusted driver asks for {@code TokenContext.trustedDeliveryVehicle(id, taskId)} instead,
 * from a client the gateway allows {@code trusted-delivery-driver}.
 */
public final class DeliveryDriverAuthTokenFactory implements AuthTokenFactory {
    private final TokenProvider tokens;

    public DeliveryDriverAuthTokenFactory(TokenProvider tokens) {
        this.tokens = tokens;
    }

    @Override
    public String getToken(AuthTokenContext context) {
        String vehicleId = context == null ? null : context.getVehicleId();
        if (vehicleId == null || vehicleId.isEmpty()) throw new IllegalStateException("the Driver SDK gave no delivery vehicle ID");
        TokenContext deliveryVehicle = TokenContext.deliveryVehicle(vehicleId);
        tokens.switchTo(deliveryVehicle);
        return tokens.token(deliveryVehicle);
    }
}
