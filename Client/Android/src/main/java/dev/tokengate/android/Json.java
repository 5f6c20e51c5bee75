package dev.tokengate.android;

import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A strict JSON reader (RFC 8259) for the gateway's answers, which are small objects of fixed shape: org.json is not
 * on a plain JVM and no JSON library is a dependency here.
 *
 * <p>Objects become {@code Map<String, Object>} (keys in order; a repeated key is an error), arrays
 * {@code List<Object>}, numbers {@link Double}, strings {@link String}, {@code true}/{@code false} {@link Boolean},
 * and {@code null} {@code null}. Invalid UTF-8, trailing text, nesting deeper than 32 and any syntax error throw
 * {@link IllegalArgumentException}.
 */
final class Json {
    private static final int MAX_DEPTH = 32;

    private final String text;
    private int position;

    private Json(String text) {
        this.text = text;
    }

    /** The value that {@code utf8} holds. */
    static Object parse(byte[] utf8) {
        try {
            String text = StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(utf8))
                    .toString();
            return parse(text);
        } catch (CharacterCodingException e) {
            throw new IllegalArgumentException("not UTF-8", e);
        }
    }

    /** The value that {@code text} holds. */
    static Object parse(String text) {
        Json reader = new Json(text);
        reader.skipWhitespace();
        Object value = reader.value(0);
        reader.skipWhitespace();
        if (reader.position != text.length()) throw reader.error("text after the value");
        return value;
    }

    /** {@code value} as an object, or null when it is anything else. */
    @SuppressWarnings("unchecked")
    static Map<String, Object> asObject(Object value) {
        return value instanceof Map ? (Map<String, Object>) value : null;
    }

    private Object value(int depth) {
        if (depth > MAX_DEPTH) throw error("nested deeper than " + MAX_DEPTH);
        if (position >= text.length()) throw error("a value is missing");
        char c = text.charAt(position);
        switch (c) {
            case '{': return object(depth);
            case '[': return array(depth);
            case '"': return string();
            case 't': return literal("true", Boolean.TRUE);
            case 'f': return literal("false", Boolean.FALSE);
            case 'n': return literal("null", null);
            default:
                if (c == '-' || (c >= '0' && c <= '9')) return number();
                throw error("unexpected character");
        }
    }

    private Map<String, Object> object(int depth) {
        Map<String, Object> members = new LinkedHashMap<>();
        position++; // {
        skipWhitespace();
        if (peek() == '}') {
            position++;
            return members;
        }
        while (true) {
            skipWhitespace();
            if (peek() != '"') throw error("a member name must be a string");
            String name = string();
            skipWhitespace();
            expect(':');
            skipWhitespace();
            Object member = value(depth + 1);
            if (members.containsKey(name)) throw error("a member name is repeated");
            members.put(name, member);
            skipWhitespace();
            char next = take();
            if (next == '}') return members;
            if (next != ',') throw error("expected , or }");
        }
    }

    private List<Object> array(int depth) {
        List<Object> elements = new ArrayList<>();
        position++; // [
        skipWhitespace();
        if (peek() == ']') {
            position++;
            return elements;
        }
        while (true) {
            skipWhitespace();
            elements.add(value(depth + 1));
            skipWhitespace();
            char next = take();
            if (next == ']') return elements;
            if (next != ',') throw error("expected , or ]");
        }
    }

    private String string() {
        position++; // "
        StringBuilder out = new StringBuilder();
        while (true) {
            char c = take();
            if (c == '"') return out.toString();
            if (c < 0x20) throw error("a control character in a string");
            if (c != '\\') {
                out.append(c);
                continue;
            }
            char escape = take();
            switch (escape) {
                case '"': out.append('"'); break;
                case '\\': out.append('\\'); break;
                case '/': out.append('/'); break;
                case 'b': out.append('\b'); break;
                case 'f': out.append('\f'); break;
                case 'n': out.append('\n'); break;
                case 'r': out.append('\r'); break;
                case 't': out.append('\t'); break;
                case 'u': out.append(hexCodeUnit()); break;
                default: throw error("an unknown escape");
            }
        }
    }

    private char hexCodeUnit() {
        if (position + 4 > text.length()) throw error("a short \\u escape");
        int unit = 0;
        for (int i = 0; i < 4; i++) {
            int digit = Character.digit(text.charAt(position++), 16);
            if (digit < 0) throw error("a bad \\u escape");
            unit = unit * 16 + digit;
        }
        return (char) unit;
    }

    private Double number() {
        int start = position;
        if (peek() == '-') position++;
        if (peek() == '0') {
            position++;
        } else if (!digits()) {
            throw error("a number without digits");
        }
        if (peek() == '.') {
            position++;
            if (!digits()) throw error("no digits after the decimal point");
        }
        if (peek() == 'e' || peek() == 'E') {
            position++;
            if (peek() == '+' || peek() == '-') position++;
            if (!digits()) throw error("no digits in the exponent");
        }
        return Double.valueOf(text.substring(start, position));
    }

    private boolean digits() {
        int start = position;
        while (position < text.length() && text.charAt(position) >= '0' && text.charAt(position) <= '9') position++;
        return position > start;
    }

    private Object literal(String word, Object value) {
        if (!text.startsWith(word, position)) throw error("an unknown literal");
        position += word.length();
        return value;
    }

    private void skipWhitespace() {
        while (position < text.length()) {
            char c = text.charAt(position);
            if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
            position++;
        }
    }

    /** The next character without consuming it, or 0 at the end (never valid where a character is peeked). */
    private char peek() {
        return position < text.length() ? text.charAt(position) : 0;
    }

    private char take() {
        if (position >= text.length()) throw error("the text ends early");
        return text.charAt(position++);
    }

    private void expect(char wanted) {
        if (take() != wanted) throw error("expected " + wanted);
    }

    private IllegalArgumentException error(String problem) {
        return new IllegalArgumentException("invalid JSON at offset " + position + ": " + problem);
    }
}
