#!/usr/bin/env python3
"""Writes the fuzzers' seed corpora and fixtures into OUT (scripts/fuzz passes .build-fuzz/seeds).

Every key is generated here, at seed time, with Python's cryptography package: nothing secret is committed, and
a fresh checkout makes fresh keys. Layout:
    OUT/<target>/<name>     one seed input per file, for each libFuzzer target
    OUT/fixtures/jws.json   what fuzz-jws verifies with: the public keys, the HMAC secret, and the exact
                            "header.payload" texts signed at seed time (the only ones it may ever accept)
    OUT/fixtures/*.json     key files that the config seeds reference by absolute path
"""

import base64
import json
import os
import shutil
import sys
from datetime import datetime, timedelta, timezone

from cryptography import x509
from cryptography.hazmat.primitives import hashes, hmac, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature
from cryptography.x509.oid import NameOID

# fuzz-jws verifies at this instant; the seed tokens are issued a minute before it.
NOW = 1_800_000_000
ISSUER = "fuzz-signer@fuzz-fleet.iam.gserviceaccount.com"
AUDIENCE = "https://fleetengine.googleapis.com/"


def b64u(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def uint(value: int, length: int | None = None) -> str:
    length = length or (value.bit_length() + 7) // 8
    return b64u(value.to_bytes(length, "big"))


def compact(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


class Key:
    """A generated signing key bound to one JWS algorithm, with its JWK forms."""

    def __init__(self, alg: str, kid: str | None):
        self.alg, self.kid = alg, kid
        if alg.startswith(("RS", "PS")):
            self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        elif alg.startswith("ES"):
            curve = {"ES256": ec.SECP256R1(), "ES384": ec.SECP384R1(), "ES512": ec.SECP521R1()}[alg]
            self.private = ec.generate_private_key(curve)
        elif alg == "EdDSA":
            self.private = ed25519.Ed25519PrivateKey.generate()
        else:
            self.private = None
            self.secret = os.urandom({"HS256": 32, "HS384": 48, "HS512": 64}[alg])

    def digest(self):
        return {"256": hashes.SHA256(), "384": hashes.SHA384(), "512": hashes.SHA512()}[self.alg[2:]]

    def sign(self, data: bytes) -> bytes:
        if self.alg.startswith("RS"):
            return self.private.sign(data, padding.PKCS1v15(), self.digest())
        if self.alg.startswith("PS"):
            salt = self.digest().digest_size
            return self.private.sign(data, padding.PSS(mgf=padding.MGF1(self.digest()), salt_length=salt), self.digest())
        if self.alg.startswith("ES"):
            r, s = decode_dss_signature(self.private.sign(data, ec.ECDSA(self.digest())))
            size = (self.private.curve.key_size + 7) // 8
            return r.to_bytes(size, "big") + s.to_bytes(size, "big")
        if self.alg == "EdDSA":
            return self.private.sign(data)
        mac = hmac.HMAC(self.secret, self.digest())
        mac.update(data)
        return mac.finalize()

    def jwk(self, private: bool = False) -> dict:
        jwk: dict = {}
        if self.private is None:
            jwk = {"kty": "oct", "k": b64u(self.secret)}
        elif isinstance(self.private, rsa.RSAPrivateKey):
            numbers = self.private.private_numbers()
            jwk = {"kty": "RSA", "n": uint(numbers.public_numbers.n), "e": uint(numbers.public_numbers.e)}
            if private:
                jwk.update(d=uint(numbers.d), p=uint(numbers.p), q=uint(numbers.q), dp=uint(numbers.dmp1),
                           dq=uint(numbers.dmq1), qi=uint(numbers.iqmp))
        elif isinstance(self.private, ec.EllipticCurvePrivateKey):
            numbers = self.private.private_numbers()
            size = (self.private.curve.key_size + 7) // 8
            crv = {256: "P-256", 384: "P-384", 521: "P-521"}[self.private.curve.key_size]
            jwk = {"kty": "EC", "crv": crv, "x": uint(numbers.public_numbers.x, size),
                   "y": uint(numbers.public_numbers.y, size)}
            if private:
                jwk["d"] = uint(numbers.private_value, size)
        else:
            raw = self.private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
            jwk = {"kty": "OKP", "crv": "Ed25519", "x": b64u(raw)}
            if private:
                jwk["d"] = b64u(self.private.private_bytes(
                    serialization.Encoding.Raw, serialization.PrivateFormat.Raw, serialization.NoEncryption()))
        jwk["alg"] = self.alg
        jwk["use"] = "sig"
        if self.kid is not None:
            jwk["kid"] = self.kid
        return jwk

    def token(self, header: dict, claims) -> tuple[str, str]:
        """A compact JWS and its signing input; `claims` may be raw bytes."""
        payload = claims if isinstance(claims, bytes) else compact(claims)
        signing_input = b64u(compact(header)) + "." + b64u(payload)
        return signing_input + "." + b64u(self.sign(signing_input.encode())), signing_input


def write(folder: str, name: str, data) -> None:
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as file:
        file.write(data if isinstance(data, bytes) else data.encode())


def jws_seeds(out: str) -> list[str]:
    """Tokens for fuzz-jws and its fixture; returns some valid tokens for the bearer seeds."""
    asymmetric = [Key("RS256", "rs256"), Key("PS256", "ps256"), Key("ES256", "es256"), Key("ES384", "es384"),
                  Key("ES512", "es512"), Key("EdDSA", None)]
    symmetric = [Key("HS256", "hs256"), Key("HS384", None)]
    claims = {"iss": ISSUER, "sub": ISSUER, "aud": AUDIENCE, "iat": NOW - 60, "exp": NOW + 3000,
              "authorization": {"tripid": "trip-1"}}
    signing_inputs, tokens = [], []

    def add(name: str, key: Key, header: dict, body) -> None:
        token, signing_input = key.token(header, body)
        signing_inputs.append(signing_input)
        tokens.append(token)
        write(f"{out}/jws", name, token)

    for key in asymmetric + symmetric:
        header = {"alg": key.alg, "typ": "JWT"} | ({"kid": key.kid} if key.kid else {})
        add(f"valid-{key.alg}", key, header, claims)
        add(f"expired-{key.alg}", key, header, claims | {"iat": NOW - 7200, "exp": NOW - 3600})
        add(f"no-exp-{key.alg}", key, header, {k: v for k, v in claims.items() if k != "exp"})
        add(f"aud-array-{key.alg}", key, header, claims | {"aud": ["other", AUDIENCE]})
        add(f"not-json-payload-{key.alg}", key, header, b"not json")
        add(f"typ-lower-{key.alg}", key, header | {"typ": "jwt"}, claims)
    rs = asymmetric[0]
    add("crit", rs, {"alg": "RS256", "kid": "rs256", "crit": ["exp"]}, claims)
    add("nbf-future", rs, {"alg": "RS256", "kid": "rs256"}, claims | {"nbf": NOW + 600})
    add("fractional-times", rs, {"alg": "RS256", "kid": "rs256"}, claims | {"iat": NOW - 60.5, "exp": NOW + 99.25})
    add("alg-differs-from-key", rs, {"alg": "PS256", "kid": "rs256"}, claims)
    add("unknown-kid", rs, {"alg": "RS256", "kid": "nobody"}, claims)
    add("no-kid-rs", rs, {"alg": "RS256"}, claims)
    add("kid-not-string", rs, {"alg": "RS256", "kid": 7}, claims)
    # Unsigned and structurally odd tokens: none of these verifies.
    write(f"{out}/jws", "alg-none", b64u(compact({"alg": "none"})) + "." + b64u(compact(claims)) + ".")
    write(f"{out}/jws", "five-segments", "a.b.c.d.e")
    write(f"{out}/jws", "padded", tokens[0] + "==")
    fixture = {
        "now": NOW, "issuer": ISSUER, "audience": AUDIENCE,
        "asymmetricKeys": {"keys": [key.jwk() for key in asymmetric]},
        "symmetricKeys": {"keys": [key.jwk() for key in symmetric]},
        "signingInputs": signing_inputs,
    }
    write(f"{out}/fixtures", "jws.json", json.dumps(fixture, indent=1))
    return tokens[:4]


def key_seeds(out: str) -> None:
    """JWK/JWKS seeds (fuzz-jwk), PEM and service-account seeds (fuzz-pem), plus files the config seeds name."""
    keys = [Key("RS256", "rsa-1"), Key("PS384", "pss"), Key("ES256", "ec-1"), Key("ES384", None), Key("ES512", "p521"),
            Key("EdDSA", "ed"), Key("HS256", "mac"), Key("HS512", None)]
    for key in keys:
        tag = f"{key.alg}-{key.kid or 'nokid'}"
        write(f"{out}/jwk", f"public-{tag}", compact(key.jwk()))
        write(f"{out}/jwk", f"private-{tag}", compact(key.jwk(private=True)))
        without_alg = {k: v for k, v in key.jwk().items() if k != "alg"}
        # The first byte, when not "{", picks the algorithm hint for members without "alg" (see FuzzJWK.swift).
        algorithms = ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA",
                      "HS256", "HS384", "HS512"]
        write(f"{out}/jwk", f"hinted-{tag}", bytes([algorithms.index(key.alg)]) + compact(without_alg))
        write(f"{out}/pem", f"jwk-{tag}", compact(key.jwk()))
    asymmetric = [key for key in keys if key.private is not None]
    jwks = {"keys": [key.jwk() for key in asymmetric]}
    write(f"{out}/jwk", "jwks-public", compact(jwks))
    write(f"{out}/jwk", "jwks-hmac", compact({"keys": [keys[6].jwk(), keys[7].jwk()]}))
    write(f"{out}/jwk", "jwks-empty", b'{"keys":[]}')
    write(f"{out}/jwk", "jwk-enc", compact(keys[0].jwk() | {"use": "enc"}))
    write(f"{out}/pem", "jwks-public", compact(jwks))
    write(f"{out}/fixtures", "session-jwks.json", compact(jwks))

    for key in asymmetric:
        tag = f"{key.alg}-{key.kid or 'nokid'}"
        pkcs8 = key.private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption())
        spki = key.private.public_key().public_bytes(serialization.Encoding.PEM,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo)
        write(f"{out}/pem", f"pkcs8-{tag}", pkcs8)
        write(f"{out}/pem", f"spki-{tag}", spki)
        if isinstance(key.private, ec.EllipticCurvePrivateKey):
            write(f"{out}/pem", f"sec1-{tag}", key.private.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                serialization.NoEncryption()))
        if isinstance(key.private, rsa.RSAPrivateKey):
            write(f"{out}/pem", f"pkcs1-public-{tag}", key.private.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.PKCS1))
            write(f"{out}/pem", f"pkcs1-private-{tag}", key.private.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                serialization.NoEncryption()))
        if key.alg in ("RS256", "ES256"):
            name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "tokengate fuzz")])
            start = datetime(2026, 1, 1, tzinfo=timezone.utc)
            certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
                           .public_key(key.private.public_key()).serial_number(x509.random_serial_number())
                           .not_valid_before(start).not_valid_after(start + timedelta(days=3650))
                           .sign(key.private, hashes.SHA256()))
            pem = certificate.public_bytes(serialization.Encoding.PEM)
            write(f"{out}/pem", f"certificate-{tag}", pem)
            write(f"{out}/fixtures", f"certificate-{key.alg}.pem", pem)
    account_key = keys[0].private.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                serialization.NoEncryption()).decode()
    account = {"type": "service_account", "project_id": "fuzz-fleet", "private_key_id": "0123abcd" * 5,
               "private_key": account_key, "client_email": ISSUER,
               "auth_uri": "https://accounts.google.com/o/oauth2/auth", "token_uri": "https://oauth2.googleapis.com/token"}
    write(f"{out}/pem", "service-account", json.dumps(account, indent=2))
    write(f"{out}/pem", "service-account-bom", b"\xef\xbb\xbf\n" + compact(account))
    write(f"{out}/fixtures", "service-account.json", compact(account))
    label = "PRIVATE" + " KEY"  # assembled, so secret scanners do not take this garbage for a committed key
    write(f"{out}/pem", "garbage-pem", f"-----BEGIN {label}-----\nAAAA\n-----END {label}-----\n")


def json_seeds(out: str) -> None:
    documents = [
        '{"alg":"RS256","typ":"JWT","kid":"k1"}', '{"a":[1,2.5,-0,1e308,-1e-308,9223372036854775807,-9223372036854775808]}',
        '{"s":"\\u00e9\\ud83d\\ude00\\n\\t\\"\\\\\\/"}', '[true,false,null,{},[],""]', '"\\ud800"', '{"a":1,"a":2}',
        '[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]', ' \t\r\n{ "x" : 1 } ', '1.0e+2',
        '18446744073709551616', '{"keys":[{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}]}', '\ufeff{}',
    ]
    for index, text in enumerate(documents):
        write(f"{out}/json", f"doc-{index}", text.encode())


def yaml_and_config_seeds(out: str, repository: str, fixtures: str) -> None:
    with open(os.path.join(repository, "config.yaml"), "rb") as file:
        demo = file.read()
    write(f"{out}/yaml", "config.yaml", demo)
    write(f"{out}/config", "config.yaml", demo)
    snippets = {
        "flow": "a: {b: [1, 2, 'three'], c: \"four\"}\n",
        "block-scalars": "literal: |\n  line one\n  line two\nfolded: >-\n  folded\n  text\n",
        "tags": "port: !!str 8080\nother: !custom value\n",
        "anchor-alias": "a: &x 1\nb: *x\n",
        "merge": "base: &b {x: 1}\nderived:\n  <<: *b\n",
        "two-documents": "a: 1\n---\nb: 2\n",
        "complex-key": "? [a, b]\n: value\n",
        "duplicate": "a: 1\na: 2\n",
        "directives": "%YAML 1.2\n%TAG ! tag:example.com,2000:\n---\n!foo bar\n",
        "bom-crlf": "\ufeffa: 1\r\nb:\r\n  - x\r\n",
        "deep": "a:\n" + "".join("  " * depth + "- \n" for depth in range(1, 40)),
    }
    for name, text in snippets.items():
        write(f"{out}/yaml", name, text.encode())

    provider = lambda body: "providers:\n  acme-rides:\n" + body  # noqa: E731
    static = ("    backend: { type: static-key, keys: { consumer: [ { serviceAccountFile: " + fixtures
              + "/service-account.json } ] } }\n")
    configs = {
        "api-key": provider(static + "    clients:\n      - name: app\n        type: api-key\n        keySha256: "
                            + "ab" * 32 + "\n        allow: { consumer: any, driver: { claim: vehicles } }\n"),
        "jwt-file": provider(static + "    clients:\n      - name: app\n        type: jwt\n        jwksFile: " + fixtures
                             + "/session-jwks.json\n        issuer: https://id.test/\n        audience: [tg, other]\n"
                             + "        leeway: 30s\n        allow: { consumer: { claim: trips } }\n"),
        "jwt-url": provider(static + "    clients:\n      - name: app\n        type: jwt\n        jwksUrl: "
                            + "https://${FUZZ_VALUE}.test/jwks.json\n        refreshInterval: 5m\n"
                            + "        requiredForReadiness: false\n        issuer: https://id.test/\n"
                            + "        audience: tg\n        allow: { driver: { claim: vehicles } }\n"),
        "everything": "server:\n  host: 0.0.0.0\n  port: 8443\n  maxConnections: 100\n  listenBacklog: 16\n"
                      + "  idleTimeout: 30s\n  readTimeout: 5s\n  cors: { allowedOrigins: ['https://a.test'], maxAge: 10m }\n"
                      + "defaults:\n  audience: https://fleetengine.googleapis.com/\n  leeway: 45s\n"
                      + "  cache: { minRemaining: 5m, refreshBefore: 10m, maxEntries: 1000 }\n"
                      + "  rateLimits:\n    provider: { rate: 100/s, burst: 10 }\n    caller: { rate: 10/min, burst: 2 }\n"
                      + "    failedAuthPerPeer: { rate: 1/h, burst: 1 }\n"
                      + provider(static + "    audience: ${FUZZ_VALUE}\n    response: { tokenKey: jwt, expiryKey: "
                                 + "expirationTimestamp, expiryFormat: epoch-milliseconds }\n"
                                 + "    clients:\n      - name: old\n        type: api-key\n        keySha256: "
                                 + "cd" * 32 + "\n        revoked: true\n        allow: { server: any }\n"),
        "file-backend": provider("    backend:\n      type: file\n      path: tokens.yaml\n      pollInterval: 5s\n"
                                 + "      verify:\n        - keyFile: " + fixtures + "/certificate-RS256.pem\n"
                                 + "          keyId: k1\n    clients: []\n"),
    }
    for name, text in configs.items():
        write(f"{out}/config", name, text.encode())
        write(f"{out}/yaml", f"config-{name}", text.encode())


def request_seeds(out: str, tokens: list[str]) -> None:
    queries = ["tripId=trip-1", "vehicleId=v%2D1", "deliveryVehicleId=dv&taskId=t1&trackingId=tr",
               "tripId=%E2%82%AC%zz", "tripId=a&tripId=b", "unknown=1", "&tripId=x&", "tripId", "=x", "tripId=" + "a" * 130,
               "&".join(f"p{i}=1" for i in range(9))]
    for index, query in enumerate(queries):
        write(f"{out}/query", f"query-{index}", query)
    headers = ["Bearer tg_demo_not_a_secret", "bearer x", "BEARER a.b.c", "Basic dXNlcjpwYXNz", "Bearer  two-spaces",
               "Bearer a..c", "Bearer .b.c", "Bearer a.b.", "Bearer " + "k" * 8192] + [f"Bearer {t}" for t in tokens]
    for index, header in enumerate(headers):
        write(f"{out}/bearer", f"header-{index}", header)
    token = tokens[0]
    responses = {
        "default": compact({"token": token}),
        "default-extra": compact({"token": token, "expiresInSeconds": 3600}),
        "ms": b"tokenKey: jwt\nexpiryKey: expirationTimestamp\nexpiryFormat: epoch-milliseconds\n\0"
              + compact({"jwt": token, "expirationTimestamp": (NOW + 3600) * 1000}),
        "seconds": b"{tokenKey: token, expiryKey: expiresAt, expiryFormat: epoch-seconds}\0"
                   + compact({"token": token, "expiresAt": NOW + 3600.5}),
        "relative": b"tokenKey: TOKEN\nexpiryKey: TOKEN_EXPIRATION\nexpiryFormat: seconds-from-now\n\0"
                    + compact({"TOKEN": token, "TOKEN_EXPIRATION": 9223372036854775807}),
        "not-object": b"[1,2]",
        "bad-mapping": b"expiryKey: token\nexpiryFormat: epoch-seconds\n\0{}",
    }
    for name, data in responses.items():
        write(f"{out}/upstream-response", name, data)


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit("usage: make-seeds.py OUT REPOSITORY")
    out, repository = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    shutil.rmtree(out, ignore_errors=True)
    tokens = jws_seeds(out)
    key_seeds(out)
    json_seeds(out)
    yaml_and_config_seeds(out, repository, f"{out}/fixtures")
    request_seeds(out, tokens)
    # The fixtures hold private keys: readable by their owner only, like the gateway's own key files.
    for name in os.listdir(f"{out}/fixtures"):
        os.chmod(f"{out}/fixtures/{name}", 0o600)


if __name__ == "__main__":
    main()
