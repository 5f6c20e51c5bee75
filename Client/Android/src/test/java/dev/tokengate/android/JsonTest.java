package dev.tokengate.android;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.Collections;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The hand-written reader of the gateway's JSON answers. */
class JsonTest {
    @Test
    void readsTheGatewaysTokenAnswer() {
        Map<String, Object> body = Json.asObject(Json.parse(("{\"token\":\"eyJ.a.b\",\"tokenType\":\"consumer\","
                + "\"context\":{\"tripId\":\"trip 42\"},\"issuedAt\":1795291871,\"expiresAt\":1795295471,"
                + "\"expiresIn\":3600,\"refreshAfter\":1795294871}").getBytes(StandardCharsets.UTF_8)));
        assertEquals("eyJ.a.b", body.get("token"));
        assertEquals(1795295471.0, body.get("expiresAt"));
        assertEquals("trip 42", Json.asObject(body.get("context")).get("tripId"));
    }

    @Test
    void readsEveryValueKindAndEscape() {
        Object value = Json.parse(" [true, false, null, -0.5e2, 0, \"a\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude95\", {}, []] ");
        assertEquals(Arrays.asList(true, false, null, -50.0, 0.0, "a\"\\/\b\f\n\r\té\uD83D\uDE95",
                Collections.emptyMap(), Collections.emptyList()), value);
    }

    @Test
    void readsUtf8Text() {
        assertEquals("trajet-é", Json.asObject(Json.parse("{\"id\":\"trajet-é\"}".getBytes(StandardCharsets.UTF_8))).get("id"));
    }

    @Test
    void refusesWhatIsNotJson() {
        for (String bad : new String[] {"", "{", "{\"a\":1,}", "[1,]", "{\"a\" 1}", "{a:1}", "01", "1.", "-", "1e",
                "\"\\x\"", "\"\\u12\"", "\"tab\there\"", "tru", "{} {}", "{\"a\":1,\"a\":2}", "NaN"}) {
            assertThrows(IllegalArgumentException.class, () -> Json.parse(bad), bad);
        }
    }

    @Test
    void refusesInvalidUtf8AndDeepNesting() {
        assertThrows(IllegalArgumentException.class, () -> Json.parse(new byte[] {'"', (byte) 0xC3, '"'}));
        String deep = "[".repeat(40) + "]".repeat(40);
        assertThrows(IllegalArgumentException.class, () -> Json.parse(deep));
        assertEquals(Collections.emptyList(), Json.parse("[".repeat(1) + "]"));
    }

    @Test
    void asObjectIsNullForAnythingElse() {
        assertNull(Json.asObject(Json.parse("[1]")));
        assertNull(Json.asObject(null));
    }
}
