package dev.tokengate.android;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * The query every request carries, without a gateway: Fleet Engine IDs percent-encoded as UTF-8, as the Swift and
 * browser clients encode them, and read back by the gateway's issue 47 rule ({@link #gatewayReading}).
 */
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
    void whatEncodeUriComponentLeavesAndEmojiAreEncodedToo() {
        assertEquals(BASE + "/v1/providers/acme-rides/tokens/consumer?tripId=%21%27%28%29%2A%F0%9F%98%80",
                url(TokenContext.trip("!'()*\uD83D\uDE00")));
    }

    @Test
    void everyRandomIdArrivesUnchangedByTheGatewaysReading() {
        FleetEngineIds ids = new FleetEngineIds(FleetEngineIds.SEED);
        List<String> all = new ArrayList<>(ids.legal(200));
        all.addAll(ids.illegal()); // the client does not judge IDs (the gateway does): these must arrive as they were too
        Pattern encoded = Pattern.compile("([A-Za-z]+=([A-Za-z0-9._~-]|%[0-9A-F]{2})*)(&[A-Za-z]+=([A-Za-z0-9._~-]|%[0-9A-F]{2})*)*");
        for (int i = 0; i < all.size(); i++) {
            String id = all.get(i);
            String other = all.get((i + 1) % all.size());
            String query = url(TokenContext.trustedDeliveryVehicle(id, other)).split("\\?", 2)[1];
            assertTrue(encoded.matcher(query).matches(), FleetEngineIds.describe(i, id) + ": " + query);
            Map<String, String> expected = new LinkedHashMap<>();
            expected.put("deliveryVehicleId", id);
            expected.put("taskId", other);
            assertEquals(expected, gatewayReading(query), FleetEngineIds.describe(i, id));
            assertEquals(Map.of("tripId", id), gatewayReading(url(TokenContext.trip(id)).split("\\?", 2)[1]),
                    FleetEngineIds.describe(i, id));
        }
    }

    /**
     * A query as the gateway reads it once issue 47 lands (as browsers and URLSearchParams encode): split on
     * {@code &}, the name before the first {@code =}, the value with {@code +} read as a space and {@code %XX} decoded
     * as UTF-8; a malformed sequence or bytes that are not UTF-8 fail the test.
     */
    private static Map<String, String> gatewayReading(String query) {
        Map<String, String> parameters = new LinkedHashMap<>();
        for (String part : query.split("&", -1)) {
            int equals = part.indexOf('=');
            String name = equals < 0 ? part : part.substring(0, equals);
            String value = equals < 0 ? "" : part.substring(equals + 1);
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            for (int i = 0; i < value.length(); i++) {
                char c = value.charAt(i);
                if (c == '+') {
                    bytes.write(' ');
                } else if (c == '%') {
                    bytes.write(Integer.parseInt(value.substring(i + 1, i + 3), 16));
                    i += 2;
                } else {
                    bytes.write(c);
                }
            }
            try {
                parameters.put(name, StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                        .onUnmappableCharacter(CodingErrorAction.REPORT).decode(ByteBuffer.wrap(bytes.toByteArray())).toString());
            } catch (CharacterCodingException e) {
                throw new AssertionError("not UTF-8: " + value, e);
            }
        }
        return parameters;
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
