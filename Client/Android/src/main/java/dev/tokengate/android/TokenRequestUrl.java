package dev.tokengate.android;

import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CharsetEncoder;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Locale;

/**
 * {@code {base}/v1/providers/{providerId}/tokens/{tokenType}?{parameter}={id}}, every variable part percent-encoded as
 * UTF-8 with only RFC 3986's unreserved characters left as they are, as the Swift client does: a space is
 * {@code %20} (never {@code +}, which the gateway reads as a plus), {@code +} is {@code %2B}, {@code é} is
 * {@code %C3%A9}, and an ID holding {@code &}, {@code =}, {@code /} or {@code #} cannot leave its slot. A batch's
 * commas are encoded too; the gateway decodes them.
 */
final class TokenRequestUrl {
    private static final char[] HEX = "0123456789ABCDEF".toCharArray();

    private TokenRequestUrl() {}

    /** The request URL, or {@link InvalidRequestException} for an empty ID or text that is not valid UTF-16. */
    static String of(String baseUrl, String providerId, TokenContext context) {
        String base = baseUrl;
        while (base.endsWith("/")) base = base.substring(0, base.length() - 1);
        StringBuilder url = new StringBuilder(base)
                .append("/v1/providers/").append(encode(providerId, "providerId"))
                .append("/tokens/").append(context.kind().tokenType());
        List<TokenContext.Parameter> parameters = context.parameters();
        for (int i = 0; i < parameters.size(); i++) {
            TokenContext.Parameter parameter = parameters.get(i);
            // Each ID must be there: "t1,,t2" or an empty trip ID is refused here, before anything is sent.
            String[] items = context.kind() == TokenContext.Kind.TASKS && parameter.name().equals("taskIds")
                    ? parameter.value().split(",", -1) : new String[] {parameter.value()};
            for (String item : items) {
                if (item.isEmpty()) throw invalid("the " + parameter.name() + " is empty");
            }
            url.append(i == 0 ? '?' : '&').append(parameter.name()).append('=')
                    .append(encode(parameter.value(), parameter.name()));
        }
        return url.toString();
    }

    /** Checks that {@code baseUrl} can be a gateway's base URL: http(s), a host, no query or fragment. */
    static void checkBaseUrl(String baseUrl) {
        String lower = baseUrl.toLowerCase(Locale.ROOT);
        int scheme = lower.startsWith("https://") ? 8 : lower.startsWith("http://") ? 7 : -1;
        if (scheme < 0 || baseUrl.length() == scheme || baseUrl.charAt(scheme) == '/'
                || baseUrl.indexOf('?') >= 0 || baseUrl.indexOf('#') >= 0) {
            throw new IllegalArgumentException("the base URL must be http(s)://host[:port][/path], without query or fragment");
        }
    }

    /** {@code text} as UTF-8 with every byte outside {@code A-Z a-z 0-9 - . _ ~} written {@code %XX}. */
    static String encode(String text, String what) {
        if (text.isEmpty()) throw invalid("the " + what + " is empty");
        ByteBuffer bytes;
        try {
            CharsetEncoder encoder = StandardCharsets.UTF_8.newEncoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT);
            bytes = encoder.encode(CharBuffer.wrap(text));
        } catch (CharacterCodingException e) {
            throw invalid("the " + what + " is not valid text (an unpaired surrogate)");
        }
        StringBuilder out = new StringBuilder(text.length() + 8);
        while (bytes.hasRemaining()) {
            int b = bytes.get() & 0xFF;
            if (isUnreserved(b)) {
                out.append((char) b);
            } else {
                out.append('%').append(HEX[b >> 4]).append(HEX[b & 0x0F]);
            }
        }
        return out.toString();
    }

    private static boolean isUnreserved(int b) {
        return (b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z') || (b >= '0' && b <= '9')
                || b == '-' || b == '.' || b == '_' || b == '~';
    }

    private static InvalidRequestException invalid(String message) {
        return new InvalidRequestException(TokenGateException.Details.NONE, message, null);
    }
}
