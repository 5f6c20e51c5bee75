package dev.tokengate.android;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * Fleet Engine IDs beyond ASCII letters and digits (UTF-8, NFC, at most 64 characters, none of {@code / : ? , #}),
 * sent through the real gateway: each must arrive unchanged in the signed token's claim. The gateway accepted only
 * {@code A-Z a-z 0-9 - _ . ~ @ + =} when these were written (a space or an accented letter was 400
 * {@code invalid_request}); tagged so that a run can leave them out while that holds.
 */
@Tag("fleet-engine-ids")
@ExtendWith(GatewayExtension.class)
@Timeout(value = 30, unit = TimeUnit.SECONDS)
class FleetEngineIdTest {
    private static void assertTripArrivesUnchanged(Gateway gateway, String tripId) throws Exception {
        TokenProvider tokens = TokenProvider.builder(gateway.url, Gateway.FLEET, () -> gateway.appKey).build();
        String token = tokens.token(TokenContext.trip(tripId));
        assertEquals(tripId, Jwt.authorization(token, gateway.signingKey).get("tripid"));
    }

    @Test
    void aTripIdWithASpace(Gateway gateway) throws Exception {
        assertTripArrivesUnchanged(gateway, "trip 42 " + UUID.randomUUID().toString().substring(0, 8));
    }

    @Test
    void aTripIdWithAPlus(Gateway gateway) throws Exception {
        assertTripArrivesUnchanged(gateway, "trip+42+" + UUID.randomUUID().toString().substring(0, 8));
    }

    @Test
    void aTripIdWithAnAccentedLetter(Gateway gateway) throws Exception {
        assertTripArrivesUnchanged(gateway, "trajet-\u00e9t\u00e9-" + UUID.randomUUID().toString().substring(0, 8));
    }
}
