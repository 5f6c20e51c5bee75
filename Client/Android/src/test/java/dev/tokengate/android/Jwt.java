package dev.tokengate.android;

import java.nio.charset.StandardCharsets;
import java.security.GeneralSecurityException;
import java.security.PublicKey;
import java.security.Signature;
import java.util.Base64;
import java.util.Map;

/** A Fleet Engine token's claims, after checking its RS256 signature against the gateway's signing key. */
final class Jwt {
    private Jwt() {}

    static Map<String, Object> verifiedClaims(String token, PublicKey key) throws GeneralSecurityException {
        String[] parts = token.split("\\.", -1);
        if (parts.length != 3) throw new AssertionError("not a compact JWS: " + parts.length + " parts");
        Signature verifier = Signature.getInstance("SHA256withRSA");
        verifier.initVerify(key);
        verifier.update((parts[0] + "." + parts[1]).getBytes(StandardCharsets.US_ASCII));
        if (!verifier.verify(Base64.getUrlDecoder().decode(parts[2]))) throw new AssertionError("the signature does not verify");
        Map<String, Object> header = Json.asObject(Json.parse(Base64.getUrlDecoder().decode(parts[0])));
        if (!"RS256".equals(header.get("alg"))) throw new AssertionError("alg " + header.get("alg"));
        return Json.asObject(Json.parse(Base64.getUrlDecoder().decode(parts[1])));
    }

    /** The {@code authorization} claim of a verified token. */
    static Map<String, Object> authorization(String token, PublicKey key) throws GeneralSecurityException {
        return Json.asObject(verifiedClaims(token, key).get("authorization"));
    }
}
