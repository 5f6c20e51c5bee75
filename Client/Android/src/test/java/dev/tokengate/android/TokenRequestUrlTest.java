package dev.tokengate.android;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.Arrays;
import org.junit.jupiter.api.Test;

/** The query every request carries, without a gateway: Fleet Engine IDs percent-encoded as UTF-8, as the Swift client does. */
class TokenRequestUrlTest {
    private static final String BASE = "https://tokens.acme.example";

    private static String url(TokenContext context) {
        return TokenRequestUrl.of(BASE, "acme-rides", context);
    }

    @Test
    void aPlainTripIdIsSentAsIs() {
        assertEquals(BASE + "/v1/providers/acme-rides/tokens/consumer?tripId=trip-42_a.b~c", url(TokenContext.trip("trip-42_a.b~c")));
    }

    @Test
    void aSpaceIsPercent20NeverPlus() {
        assertEquals(BASE + "/v1/providers/acme-rides/tokens/consumer?tripId=trip%2042", url(TokenContext.trip("trip 42")));
    }

    @Test
    void aPlusIsPercent2B() {
        assertEquals(BASE + "/v1/providers/acme-rides/tokens/consumer?tripId=trip%2B42", url(TokenContext.trip("trip+42")));
    }

    @Test
    void nonAsciiLettersAreUtf8Bytes() {
        // é as one code point (NFC, U+00E9), ü, and a letter outside the BMP (U+1D49C, a surrogate pair).
        assertEquals(BASE + "/v1/providers/acme-rides/tokens/driver?vehicleId=v%C3%A9hicule-Z%C3%BCrich-%F0%9D%92%9C",
                url(TokenContext.vehicle("véhicule-Zürich-\uD835\uDC9C")));
    }

    @Test
    void eachDecomposedMarkIsSentAsGivenNotNormalized() {
        // e + U+0301 (NFD): the client sends what the SDK gave; Fleet Engine's IDs are NFC, the gateway judges.
        assertEquals(BASE + "/v1/providers/acme-rides/tokens/consumer?tripId=e%CC%81", url(TokenContext.trip("e\u0301")));
    }

    @Test
    void queryAndPathDelimitersCannotLeaveTheirSlot() {
        assertEquals(BASE + "/v1/providers/acme-rides/tokens/consumer?tripId=a%26vehicleId%3Dv%2Fx%3Fy%23z%2Cw%3A%25",
                url(TokenContext.trip("a&vehicleId=v/x?y#z,w:%")));
    }

    @Test
    void theProviderIdIsEncodedAndAPathPrefixKept() {
        assertEquals("http://127.0.0.1:8080/tokengate/v1/providers/acme%20rides/tokens/consumer?tripId=t",
                TokenRequestUrl.of("http://127.0.0.1:8080/tokengate//", "acme rides", TokenContext.trip("t")));
    }

    @Test
    void everyKindMapsToItsRoute() {
        assertEquals(BASE + "/v1/providers/acme-rides/tokens/delivery-driver?deliveryVehicleId=van%207",
                url(TokenContext.deliveryVehicle("van 7")));
        assertEquals(BASE + "/v1/providers/acme-rides/tokens/trusted-delivery-driver?deliveryVehicleId=van-7&taskId=%2A",
                url(TokenContext.trustedDeliveryVehicle("van-7", "*")));
        assertEquals(BASE + "/v1/providers/acme-rides/tokens/delivery-consumer?trackingId=parcel%201",
                url(TokenContext.tracking("parcel 1")));
        assertEquals(BASE + "/v1/providers/acme-rides/tokens/delivery-consumer?taskId=task-1", url(TokenContext.task("task-1")));
        assertEquals(BASE + "/v1/providers/acme-rides/tokens/batch-tasks?taskIds=t%201%2Ct%2B2",
                url(TokenContext.tasks(Arrays.asList("t 1", "t+2"))));
        assertEquals(BASE + "/v1/providers/acme-rides/tokens/fleet-reader", url(TokenContext.fleetReader()));
        assertEquals(BASE + "/v1/providers/acme-rides/tokens/delivery-fleet-reader", url(TokenContext.deliveryFleetReader()));
    }

    @Test
    void anEmptyIdIsRefusedBeforeAnythingIsSent() {
        assertEquals(TokenGateException.Code.INVALID_REQUEST,
                assertThrows(InvalidRequestException.class, () -> url(TokenContext.trip(""))).code());
        assertThrows(InvalidRequestException.class, () -> url(TokenContext.tasks(Arrays.asList("t1", "", "t2"))));
        assertThrows(InvalidRequestException.class, () -> url(TokenContext.trustedDeliveryVehicle("van-7", "")));
    }

    @Test
    void anUnpairedSurrogateIsRefusedNotReplaced() {
        InvalidRequestException refused = assertThrows(InvalidRequestException.class, () -> url(TokenContext.trip("trip-\uD835")));
        assertEquals(0, refused.status());
    }

    @Test
    void aBaseUrlMustBeHttpWithAHost() {
        TokenRequestUrl.checkBaseUrl("https://tokens.acme.example/prefix");
        for (String bad : new String[] {"tokens.acme.example", "ftp://host", "https://", "https:///path", "http://h/?q=1", "http://h/#f"}) {
            assertThrows(IllegalArgumentException.class, () -> TokenRequestUrl.checkBaseUrl(bad), bad);
        }
    }
}
