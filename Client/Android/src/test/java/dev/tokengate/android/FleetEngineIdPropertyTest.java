package dev.tokengate.android;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * 200 legal and 41 illegal random Fleet Engine IDs (FleetEngineIds, seeded) sent through the real gateway: each legal
 * one must arrive unchanged in its signed token's {@code tripid}, each illegal one be refused 400
 * {@code invalid_request}. The legal test is tagged {@code fleet-engine-ids}: it needs a gateway that accepts every
 * legal ID (issue 47), and fails against one that still accepts only ASCII letters, digits and {@code -_.~@+=}.
 */
@ExtendWith(GatewayExtension.class)
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class FleetEngineIdPropertyTest {
    private static List<String> legal;
    private static List<String> illegal;

    @BeforeAll
    static void draw() {
        FleetEngineIds ids = new FleetEngineIds(FleetEngineIds.SEED);
        legal = ids.legal(200);
        illegal = ids.illegal();
        System.out.println("Fleet Engine IDs: seed " + FleetEngineIds.SEED + " (TOKENGATE_ID_SEED), " + legal.size()
                + " legal and " + illegal.size() + " illegal");
        for (String id : legal) assertTrue(FleetEngineIds.isLegal(id), id);
        for (String id : illegal) assertFalse(FleetEngineIds.isLegal(id), id);
    }

    @Test
    @Tag("fleet-engine-ids")
    void randomLegalIdsArriveUnchangedInTheTokensClaim(Gateway gateway) throws Exception {
        RecordingTransport transport = new RecordingTransport();
        TokenProvider tokens = TokenProvider.builder(gateway.url, Gateway.FLEET, () -> gateway.appKey).transport(transport).build();
        List<String> failures = new ArrayList<>();
        for (int i = 0; i < legal.size(); i++) {
            String id = legal.get(i);
            try {
                Object claim = Jwt.authorization(tokens.token(TokenContext.trip(id)), gateway.signingKey).get("tripid");
                if (!id.equals(claim)) failures.add(FleetEngineIds.describe(i, id) + ": the claim is " + claim);
            } catch (TokenGateException e) {
                failures.add(FleetEngineIds.describe(i, id) + ": " + e.code() + " (" + e.status() + ")");
            }
        }
        assertEquals(0, failures.size(), failures.size() + " of " + legal.size() + " legal IDs:\n"
                + String.join("\n", failures.subList(0, Math.min(20, failures.size()))));
        assertEquals(legal.size(), transport.count()); // one request each
    }

    @Test
    void randomIllegalIdsAreRefused400InvalidRequest(Gateway gateway) {
        RecordingTransport transport = new RecordingTransport();
        TokenProvider tokens = TokenProvider.builder(gateway.url, Gateway.FLEET, () -> gateway.appKey).transport(transport).build();
        List<String> failures = new ArrayList<>();
        for (int i = 0; i < illegal.size(); i++) {
            String id = illegal.get(i);
            try {
                tokens.token(TokenContext.trip(id));
                failures.add(FleetEngineIds.describe(i, id) + ": a token");
            } catch (InvalidRequestException e) {
                if (e.status() != 400 || !"invalid_request".equals(e.serverCode())) {
                    failures.add(FleetEngineIds.describe(i, id) + ": " + e.status() + " " + e.serverCode());
                }
            } catch (TokenGateException e) {
                failures.add(FleetEngineIds.describe(i, id) + ": " + e.code() + " (" + e.status() + ")");
            }
        }
        assertEquals(0, failures.size(), failures.size() + " of " + illegal.size() + " illegal IDs:\n"
                + String.join("\n", failures.subList(0, Math.min(20, failures.size()))));
        assertEquals(illegal.size(), transport.count()); // a 400 is never retried
    }
}
