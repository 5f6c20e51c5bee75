package dev.tokengate.android;

import java.text.Normalizer;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;

/**
 * Random Fleet Engine IDs, legal and illegal, from the pools Tests/Browser/fleet_engine_ids.py draws from (the
 * sequences differ: so do the generators). Fleet Engine's rule: valid UTF-8 in NFC, at most 64 characters, none of
 * {@code / : ? , #}. A character is a code point; every pooled one is a grapheme of its own and NFC whatever its
 * neighbours, so the lengths hold by any count. Left out though legal: {@code *} (the gateway refuses it as an ID: a
 * claim of {@code *} means every trip) and {@code \} (Fleet Engine's older documentation forbids it). Seeded by
 * {@code TOKENGATE_ID_SEED}, default 47.
 */
final class FleetEngineIds {
    static final long SEED = seed();
    static final int MAX_LENGTH = 64;
    static final String FORBIDDEN = "/:?,#";

    private static final String[] POOLS = {
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
        " +%&=-_.~@!$'()[];<>\"{}|^`",
        "\u00e0\u00e1\u00e2\u00e3\u00e4\u00e5\u00e7\u00e8\u00e9\u00ea\u00eb\u00ec\u00ed\u00ee\u00ef\u00f1\u00f2\u00f3"
                + "\u00f4\u00f5\u00f6\u00f9\u00fa\u00fb\u00fc\u00fd\u00ff\u00c0\u00c9\u00d1\u00d6\u00dc\u00df\u00f8\u00e6\u0153",
        "\u03b1\u03b2\u03b3\u03b4\u03b5\u03b6\u03b7\u03b8\u03bb\u03bc\u03c0\u03c3\u03c9\u03a9\u03a3\u0430\u0431\u0432"
                + "\u0433\u0434\u0436\u0437\u0438\u0439\u043a\u043b\u044f\u0416\u042f\u4e2d\u6587\u5b57\u8eca\u65c5\u7a0b"
                + "\u6771\u4eac\u5317\u3042\u3044\u3046\u3048\u304a\u304b\u304d\uac00\ub098\ub2e4\ub77c\ub9c8\ubc14\uc0ac",
        "\u20ac\u00a3\u00a5\u00a9\u00ae\u00b0\u00b1\u00b5\u00b6\u00a7\u2605\u2665\u2713",
        new String(Character.toChars(0x1F600)) + new String(Character.toChars(0x1F602)) + new String(Character.toChars(0x1F923))
                + new String(Character.toChars(0x1F60D)) + new String(Character.toChars(0x1F695))
                + new String(Character.toChars(0x1F69A)) + new String(Character.toChars(0x1F4E6))
                + new String(Character.toChars(0x1F6F5)) + new String(Character.toChars(0x1D49C))
                + new String(Character.toChars(0x1D538)),
    };

    /** Legal IDs at the edges: text that looks percent-encoded, spaces at either end, {@code +}, {@code =}, {@code &}. */
    static final List<String> EDGES = Arrays.asList("100%", "%41", "%2F%3A%23", "a+b", "+", " ", " lead", "trail ", "a  b",
            "=&=", "a=b&c=d", "\u00e9", repeat(new String(Character.toChars(0x1F600)), 64), repeat("x", 64));

    /** Not NFC: a decomposed é and Å, the Ohm and Angstrom signs (NFC: Ω and Å), Hangul jamo (NFC: 가). */
    static final List<String> NOT_NFC = Arrays.asList("e\u0301", "A\u030a", "\u2126", "\u212b", "\u1100\u1161");

    private final Random random;

    FleetEngineIds(long seed) {
        random = new Random(seed);
    }

    /** {@code count} legal IDs: the edges, then random ones, a fifth of them exactly 64 characters. */
    List<String> legal(int count) {
        List<String> ids = new ArrayList<>(EDGES.subList(0, Math.min(count, EDGES.size())));
        while (ids.size() < count) ids.add(text(random.nextInt(5) == 0 ? MAX_LENGTH : 1 + random.nextInt(MAX_LENGTH)));
        return ids;
    }

    /** Each forbidden character in a random legal ID (six times), six IDs of 65 characters, and each of NOT_NFC. */
    List<String> illegal() {
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < FORBIDDEN.length(); i++) {
            for (int n = 0; n < 6; n++) ids.add(inserting(FORBIDDEN.substring(i, i + 1), MAX_LENGTH - 1));
        }
        for (int n = 0; n < 6; n++) ids.add(text(MAX_LENGTH + 1));
        for (String decomposed : NOT_NFC) ids.add(inserting(decomposed, MAX_LENGTH - 2));
        return ids;
    }

    /** Fleet Engine's rule on its own terms: 1 to 64 code points, NFC, none of {@code / : ? , #}. */
    static boolean isLegal(String id) {
        int length = id.codePointCount(0, id.length());
        if (length < 1 || length > MAX_LENGTH || !Normalizer.isNormalized(id, Normalizer.Form.NFC)) return false;
        for (int i = 0; i < FORBIDDEN.length(); i++) {
            if (id.indexOf(FORBIDDEN.charAt(i)) >= 0) return false;
        }
        return true;
    }

    /** {@code id} with its non-ASCII characters written {@code \\uXXXX}, for a readable failure message. */
    static String describe(int index, String id) {
        StringBuilder text = new StringBuilder("seed ").append(SEED).append(", ID #").append(index).append(" \"");
        for (char c : id.toCharArray()) {
            if (c >= 0x20 && c < 0x7F) text.append(c);
            else text.append(String.format("\\u%04x", (int) c));
        }
        return text.append('"').toString();
    }

    private String text(int length) {
        StringBuilder text = new StringBuilder();
        for (int i = 0; i < length; i++) {
            String pool = POOLS[random.nextInt(POOLS.length)];
            int points = pool.codePointCount(0, pool.length());
            text.appendCodePoint(pool.codePointAt(pool.offsetByCodePoints(0, random.nextInt(points))));
        }
        return text.toString();
    }

    private String inserting(String part, int maxLength) {
        String base = text(random.nextInt(maxLength + 1));
        int at = base.offsetByCodePoints(0, random.nextInt(base.codePointCount(0, base.length()) + 1));
        return base.substring(0, at) + part + base.substring(at);
    }

    private static String repeat(String text, int times) {
        StringBuilder repeated = new StringBuilder();
        for (int i = 0; i < times; i++) repeated.append(text);
        return repeated.toString();
    }

    private static long seed() {
        String value = System.getenv("TOKENGATE_ID_SEED");
        return value == null || value.isEmpty() ? 47 : Long.parseLong(value);
    }
}
