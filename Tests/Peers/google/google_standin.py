#!/usr/bin/env python3
"""Loopback stand-in for the Google endpoints a keyless (ADC + IAM signJwt) signer talks to.

Start:  python3 google_standin.py --state-dir DIR [--port 0] [--max-seconds 1800] [--exit-on-stdin-eof] [--verbose]
It binds 127.0.0.1 only and prints exactly one first line to stdout, then flushes:
    {"port": N}
Every endpoint below is served on that one port (base URL http://127.0.0.1:N). RSA keys are generated at
start and on demand; nothing is read from or sent off loopback. Stop it with SIGTERM (or SIGINT); it also
stops by itself after --max-seconds (default 1800) and, with --exit-on-stdin-eof, when its stdin closes.
At start the metadata server's account standin-default@standin-project.iam.gserviceaccount.com (project
"standin-project", number 100000000001, scope cloud-platform) is registered; it holds no grant until given one.

Endpoints (each follows Google's REST reference; "kind" is the name used by faults and call counts)
  kind metadata     GCE/GKE/Cloud Run metadata server (clients: GCE_METADATA_HOST=127.0.0.1:N and, for
                    google-auth's ping, GCE_METADATA_IP=127.0.0.1:N). Every request needs the header
                    `Metadata-Flavor: Google` (else 403) and must not carry X-Forwarded-For (else 403);
                    every answer carries `Metadata-Flavor: Google`. Text answers are `application/text`.
      GET /                                                    ping ("computeMetadata/")
      GET /computeMetadata/v1/instance/service-accounts/       "default/\\n<email>/\\n"
      GET /computeMetadata/v1/instance/service-accounts/{default|email}/?recursive=true
                                                               {"aliases":["default"],"email":..,"scopes":[..]}
      GET /computeMetadata/v1/instance/service-accounts/{default|email}/email|scopes|aliases
      GET /computeMetadata/v1/instance/service-accounts/{default|email}/token[?scopes=a,b]
                                                               {"access_token","expires_in","token_type":"Bearer"}
      GET /computeMetadata/v1/project/project-id | project/numeric-project-id | universe/universe-domain
  kind token        POST /token  (aliases /o/oauth2/token, /oauth2/v4/token), form-encoded:
                    grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=<RS256 JWT>
                    grant_type=refresh_token&client_id=..&client_secret=..&refresh_token=..[&scope=..]
                    -> 200 {"access_token","expires_in","token_type":"Bearer","scope"?}
                    -> 400/401 {"error":"invalid_grant|invalid_client|invalid_scope|...","error_description":..}
  kind sts          POST /v1/token  RFC 8693 token exchange (form or JSON) ->
                    {"access_token","issued_token_type","token_type":"Bearer","expires_in"}
  kind signJwt, signBlob, generateAccessToken
                    POST /v1/projects/-/serviceAccounts/{email}:signJwt             {"payload": "<claims JSON>", "delegates": [..]}
                         -> {"keyId","signedJwt"}  header {"alg":"RS256","kid":keyId,"typ":"JWT"}
                    POST /v1/projects/-/serviceAccounts/{email}:signBlob            {"payload": base64, "delegates": [..]}
                         -> {"keyId","signedBlob": base64}   (RSASSA-PKCS1-v1_5 SHA-256)
                    POST /v1/projects/-/serviceAccounts/{email}:generateAccessToken {"scope":[..],"lifetime":"3600s","delegates":[..]}
                         -> {"accessToken","expireTime":"YYYY-MM-DDTHH:MM:SSZ"}
                    Each needs `Authorization: Bearer <unexpired access token issued here>` (401 otherwise), a token
                    scope of cloud-platform or iam (403 ACCESS_TOKEN_SCOPE_INSUFFICIENT otherwise) and a Token
                    Creator grant for the token's principal on the target (403 IAM_PERMISSION_DENIED otherwise;
                    an unknown target also answers 403, as with Google's `-` wildcard). Delegates
                    ("projects/-/serviceAccounts/E") form a chain: caller -> d1 -> ... -> target, each hop granted.
  kind publicKeys   GET /service_accounts/v1/jwk/{email}            (alias /robot/v1/metadata/jwk/{email})
                         -> {"keys":[{"kty":"RSA","alg":"RS256","use":"sig","kid","n","e"}]}
                    GET /service_accounts/v1/metadata/x509/{email}  (alias /robot/v1/metadata/x509/{email})
                         -> {"<kid>": "-----BEGIN CERTIFICATE-----..."}
                    Every published key of the account: its system-managed keys (signJwt/signBlob) and its
                    user-managed keys (exported key files). Unknown account: 404.

Principals (what an access token was issued to; the keys of "grants" and of byPrincipal in call counts)
  service account          its email (metadata token, JWT-bearer grant, generateAccessToken)
  authorized user          the "email" given when registering it (refresh_token grant)
  workload identity        principal://iam.googleapis.com/projects/N/locations/global/workloadIdentityPools/POOL/subject/SUBJECT
                           (N and POOL from the STS audience, SUBJECT from the provider's "subjects" map)

Control (loopback only, never counted as calls)
  POST /_control  with one JSON object; every key optional, applied in this order; unknown keys -> 400:
    {"reset": ["calls","faults","grants","tokens"],
     "accounts": [{"email": "a@p.iam.gserviceaccount.com", "projectId": "p", "exportKeyFile": true}],
         # registers (idempotent) an account with one system-managed key; exportKeyFile adds a user-managed key
         # and writes DIR/<email>.json (type service_account, token_uri = this stand-in's /token, mode 0600)
     "authorizedUsers": [{"clientId": "c", "clientSecret": "s", "refreshToken": "r", "email": "u@example.com",
                          "scopes": ["https://www.googleapis.com/auth/cloud-platform"], "exportFile": true}],
         # exportFile writes DIR/authorized_user-<clientId>.json (no token_uri, like gcloud's ADC file)
     "workloadProviders": [{"audience": "//iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/pool/providers/prov",
                            "subjects": {"<subject token as sent>": "<subject>"}}],
     "grants": {"<principal>": ["target@p.iam.gserviceaccount.com", ...]},   # replaces that principal's set
     "disableKeys": [{"email": "a@p.iam.gserviceaccount.com", "kid": "<40 hex>"}],  # as serviceAccounts.keys.disable:
         # the key leaves the JWKS/x509 lists and its JWT-bearer grants fail; "enableKeys" (same shape) undoes it
     "rotate": [{"email": "a@p.iam.gserviceaccount.com", "keepOld": true}],   # new current system key;
         # keepOld false removes the old system keys from the JWKS/x509 (they then fail verification)
     "tokenLifetimeSec": 3599 | null,   # lifetime of every access token issued from now on (0 = already expired);
         # null = defaults (3599 s; generateAccessToken: the requested lifetime)
     "metadata": {"email": .., "projectId": .., "numericProjectId": .., "scopes": [..], "universeDomain": ..},
         # the metadata server's default account (registered if new) and project
     "publicKeysMaxAgeSec": 3600,       # Cache-Control max-age on the public key endpoints
     "faults": {"<kind>": <fault> | null}}   # kinds: metadata token sts signJwt signBlob generateAccessToken publicKeys
         # <fault> = {"status": 403|429|500|503|..., "count": N, "retryAfter": S, "delayMs": D,
         #            "mode": "unpublishedKey"|"otherAccount"|"noKid", "account": "<other email>"}
         # A fault is active while count != 0; each call of that kind uses one count (count defaults to 1 with
         # "status", else unlimited). While active a call sleeps delayMs, then fails with status (Google's error
         # body for that endpoint; Retry-After: retryAfter (default 1) on 429/503), or else (signJwt, signBlob)
         # signs per mode: unpublishedKey = a key of the account that is in no JWKS; otherAccount = another
         # registered account's current key and kid ("account" picks it); noKid = header without kid (signJwt).
    -> 200 the state (as GET /_control): {"ok": true, "baseUrl", "stateDir", "accounts": {email: {"uniqueId",
       "projectId", "kid" (current system key), "keys": [{"kid","type":"SYSTEM_MANAGED|USER_MANAGED","published"}],
       "keyFile"}}, "authorizedUsers": {clientId: {"email","file"}}, "grants", "metadata", "faults", "tokenLifetimeSec"}
  GET /_control/calls -> {"calls": {kind: {"count", "byStatus": {"200": n}, "byPrincipal": {p: n}, "byTarget": {e: n}}},
                          "log": [{"seq","t","kind","method","path","status","principal","target"}, ...]}  (last 2000)
"""

import argparse
import base64
import collections
import datetime
import hashlib
import json
import os
import re
import secrets
import signal
import sys
import threading
import time
import traceback
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import NameOID

KINDS = ("metadata", "token", "sts", "signJwt", "signBlob", "generateAccessToken", "publicKeys")
SCOPE_CLOUD = "https://www.googleapis.com/auth/cloud-platform"
SCOPE_IAM = "https://www.googleapis.com/auth/iam"
GOOGLE_TOKEN_AUDIENCES = (
    "https://oauth2.googleapis.com/token",
    "https://accounts.google.com/o/oauth2/token",
    "https://www.googleapis.com/oauth2/v4/token",
)
JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
SUBJECT_TOKEN_TYPES = {
    "urn:ietf:params:oauth:token-type:jwt",
    "urn:ietf:params:oauth:token-type:id_token",
    "urn:ietf:params:oauth:token-type:saml2",
    "urn:ietf:params:oauth:token-type:access_token",
    "urn:ietf:params:aws:token-type:aws4_request",
}
DEFAULT_LIFETIME = 3599
MAX_BODY = 1 << 20
AUTH_HELP = "See https://developers.google.com/identity/sign-in/web/devconsole-project."
IAM_METHODS = {
    "signJwt": ("iam.serviceAccounts.signJwt", "SignJwt"),
    "signBlob": ("iam.serviceAccounts.signBlob", "SignBlob"),
    "generateAccessToken": ("iam.serviceAccounts.getAccessToken", "GenerateAccessToken"),
}
STATUS_NAMES = {
    400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
    409: "ABORTED", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 501: "NOT_IMPLEMENTED",
    503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED",
}
STATUS_MESSAGES = {
    400: "Request contains an invalid argument.",
    401: "Request had invalid authentication credentials.",
    403: "The caller does not have permission",
    404: "Requested entity was not found.",
    429: "Resource has been exhausted (e.g. check quota).",
    500: "Internal error encountered.",
    503: "The service is currently unavailable.",
    504: "The request timed out.",
}
OAUTH_FAULT_ERRORS = {
    400: ("invalid_request", "Bad Request"),
    401: ("invalid_client", "Unauthorized"),
    403: ("access_denied", "Forbidden"),
    429: ("rate_limit_exceeded", "Rate Limit Exceeded"),
    500: ("internal_failure", "Backend Error"),
    503: ("temporarily_unavailable", "Service Unavailable"),
}


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def int_b64url(value: int) -> str:
    return b64url(value.to_bytes((value.bit_length() + 7) // 8, "big"))


def rfc3339(epoch: float) -> str:
    # The exact form Google answers in expireTime (google-auth parses it with "%Y-%m-%dT%H:%M:%SZ").
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(int(epoch)))


class Key:
    """One RSA 2048 key pair of a service account."""

    def __init__(self, key_type: str):
        self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        der = self.private.public_key().public_bytes(
            serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
        self.kid = hashlib.sha1(der).hexdigest()  # 40 hex digits, like Google's key IDs
        self.type = key_type  # SYSTEM_MANAGED (signJwt/signBlob) or USER_MANAGED (exported key file)
        self.published = True
        self._cert_pem = None

    def sign(self, data: bytes) -> bytes:
        return self.private.sign(data, padding.PKCS1v15(), hashes.SHA256())

    def verify(self, signature: bytes, data: bytes) -> bool:
        try:
            self.private.public_key().verify(signature, data, padding.PKCS1v15(), hashes.SHA256())
            return True
        except InvalidSignature:
            return False

    def jwk(self) -> dict:
        numbers = self.private.public_key().public_numbers()
        return {"kty": "RSA", "alg": "RS256", "use": "sig", "kid": self.kid,
                "n": int_b64url(numbers.n), "e": int_b64url(numbers.e)}

    def private_pem(self) -> str:
        return self.private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption()).decode("ascii")

    def cert_pem(self, common_name: str) -> str:
        if self._cert_pem is None:
            now = datetime.datetime.now(datetime.timezone.utc)
            name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name[:64])])
            cert = (x509.CertificateBuilder()
                    .subject_name(name).issuer_name(name)
                    .public_key(self.private.public_key())
                    .serial_number(int(self.kid[:30], 16))
                    .not_valid_before(now - datetime.timedelta(days=1))
                    .not_valid_after(now + datetime.timedelta(days=3650))
                    .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                    .sign(self.private, hashes.SHA256()))
            self._cert_pem = cert.public_bytes(serialization.Encoding.PEM).decode("ascii")
        return self._cert_pem


class Account:
    def __init__(self, email: str, project_id: str):
        self.email = email
        self.project_id = project_id
        self.unique_id = "1" + "".join(secrets.choice("0123456789") for _ in range(20))
        self.keys = [Key("SYSTEM_MANAGED")]
        self.current = self.keys[0]
        self.key_file = None
        self._rogue = None  # signs for the "unpublishedKey" fault: a key in no JWKS

    def published_keys(self):
        return [k for k in self.keys if k.published]

    def rogue(self) -> Key:
        if self._rogue is None:
            self._rogue = Key("SYSTEM_MANAGED")
            self._rogue.published = False
        return self._rogue


class ControlError(Exception):
    pass


class State:
    def __init__(self, state_dir: str):
        self.lock = threading.RLock()
        self.state_dir = state_dir
        self.base_url = ""
        self.accounts = {}
        self.clients = {}          # client_id -> client_secret
        self.refresh_tokens = {}   # refresh_token -> {"clientId","email","scopes"}
        self.user_files = {}       # client_id -> {"email","file"}
        self.providers = {}        # audience -> {"subjects": {token: subject}}
        self.grants = {}           # principal -> set(target emails)
        self.tokens = {}           # access token -> {"principal","scopes","exp"}
        self.token_lifetime = None
        self.public_keys_max_age = 3600
        self.faults = {}
        self.seq = 0
        self.log = collections.deque(maxlen=2000)
        self.calls = {}
        self.reset_calls()
        self.metadata = {"email": "standin-default@standin-project.iam.gserviceaccount.com",
                         "projectId": "standin-project", "numericProjectId": "100000000001",
                         "scopes": [SCOPE_CLOUD], "universeDomain": "googleapis.com"}
        self.ensure_account(self.metadata["email"], None)

    # --- accounts, tokens -------------------------------------------------------------------------
    def ensure_account(self, email: str, project_id) -> Account:
        account = self.accounts.get(email)
        if account is None:
            if not isinstance(email, str) or "@" not in email:
                raise ControlError("account email must look like name@project.iam.gserviceaccount.com: %r" % (email,))
            if project_id is None:
                m = re.match(r"^[^@]+@([^.]+)\.iam\.gserviceaccount\.com$", email)
                project_id = m.group(1) if m else "standin-project"
            account = Account(email, project_id)
            self.accounts[email] = account
        return account

    def export_key_file(self, account: Account) -> str:
        key = Key("USER_MANAGED")
        account.keys.append(key)
        info = {
            "type": "service_account",
            "project_id": account.project_id,
            "private_key_id": key.kid,
            "private_key": key.private_pem(),
            "client_email": account.email,
            "client_id": account.unique_id,
            "auth_uri": "https://accounts.google.com/o/oauth2/auth",
            "token_uri": self.base_url + "/token",
            "auth_provider_x509_cert_url": "https://www.googleapis.com/oauth2/v1/certs",
            "client_x509_cert_url": self.base_url + "/robot/v1/metadata/x509/" + urllib.parse.quote(account.email),
            "universe_domain": "googleapis.com",
        }
        path = os.path.join(self.state_dir, account.email + ".json")
        write_private_json(path, info)
        account.key_file = path
        return path

    def issue_token(self, principal: str, scopes, lifetime=None):
        if self.token_lifetime is not None:
            lifetime = self.token_lifetime
        elif lifetime is None:
            lifetime = DEFAULT_LIFETIME
        token = "ya29.standin." + secrets.token_urlsafe(40)
        exp = time.time() + lifetime
        self.tokens[token] = {"principal": principal, "scopes": list(scopes), "exp": exp}
        return token, int(lifetime), exp

    def may_act_as(self, principal: str, target: str) -> bool:
        return target in self.accounts and target in self.grants.get(principal, ())

    # --- calls and faults -------------------------------------------------------------------------
    def reset_calls(self):
        self.calls = {k: {"count": 0, "byStatus": {}, "byPrincipal": {}, "byTarget": {}} for k in KINDS}
        self.log.clear()

    def record(self, kind, method, path, status, principal, target):
        with self.lock:
            self.seq += 1
            c = self.calls[kind]
            c["count"] += 1
            c["byStatus"][str(status)] = c["byStatus"].get(str(status), 0) + 1
            if principal:
                c["byPrincipal"][principal] = c["byPrincipal"].get(principal, 0) + 1
            if target:
                c["byTarget"][target] = c["byTarget"].get(target, 0) + 1
            self.log.append({"seq": self.seq, "t": round(time.time(), 3), "kind": kind, "method": method,
                             "path": path, "status": status, "principal": principal, "target": target})

    def take_fault(self, kind):
        """The active fault of this kind for one call (a copy), using one of its count."""
        with self.lock:
            fault = self.faults.get(kind)
            if fault is None:
                return None
            if fault["count"] > 0:
                fault["count"] -= 1
                if fault["count"] == 0:
                    del self.faults[kind]
            return dict(fault)

    # --- control ------------------------------------------------------------------------------------
    def apply_control(self, body: dict):
        allowed = ("reset", "accounts", "authorizedUsers", "workloadProviders", "grants", "disableKeys", "enableKeys", "rotate",
                   "tokenLifetimeSec", "metadata", "publicKeysMaxAgeSec", "faults")
        unknown = set(body) - set(allowed)
        if unknown:
            raise ControlError("unknown control keys: %s (allowed: %s)" % (sorted(unknown), ", ".join(allowed)))
        with self.lock:
            for what in body.get("reset", []):
                if what == "calls":
                    self.reset_calls()
                elif what == "faults":
                    self.faults.clear()
                elif what == "grants":
                    self.grants.clear()
                elif what == "tokens":
                    self.tokens.clear()
                else:
                    raise ControlError("reset takes calls, faults, grants, tokens: %r" % (what,))
            for spec in body.get("accounts", []):
                account = self.ensure_account(spec.get("email"), spec.get("projectId"))
                if spec.get("exportKeyFile"):
                    self.export_key_file(account)
            for spec in body.get("authorizedUsers", []):
                try:
                    cid, secret, rt = spec["clientId"], spec["clientSecret"], spec["refreshToken"]
                except KeyError as e:
                    raise ControlError("authorizedUsers entry needs %s" % e) from None
                email = spec.get("email", "user-%s@example.com" % cid)
                self.clients[cid] = secret
                self.refresh_tokens[rt] = {"clientId": cid, "email": email,
                                           "scopes": list(spec.get("scopes", [SCOPE_CLOUD]))}
                entry = {"email": email, "file": None}
                if spec.get("exportFile"):
                    path = os.path.join(self.state_dir, "authorized_user-%s.json" % re.sub(r"[^A-Za-z0-9._-]", "_", cid))
                    write_private_json(path, {"type": "authorized_user", "client_id": cid,
                                              "client_secret": secret, "refresh_token": rt,
                                              "universe_domain": "googleapis.com"})
                    entry["file"] = path
                self.user_files[cid] = entry
            for spec in body.get("workloadProviders", []):
                audience = spec.get("audience")
                if not isinstance(audience, str) or not audience:
                    raise ControlError("workloadProviders entry needs an audience")
                subjects = spec.get("subjects", {})
                if not isinstance(subjects, dict):
                    raise ControlError("workloadProviders subjects must map subject token -> subject")
                self.providers.setdefault(audience, {"subjects": {}})["subjects"].update(subjects)
            grants = body.get("grants", {})
            if not isinstance(grants, dict):
                raise ControlError("grants must map principal -> [service account emails]")
            for principal, targets in grants.items():
                self.grants[principal] = set(targets or [])
            for name, published in (("disableKeys", False), ("enableKeys", True)):
                for spec in body.get(name, []):
                    account = self.accounts.get(spec.get("email"))
                    key = next((k for k in account.keys if k.kid == spec.get("kid")), None) if account else None
                    if key is None:
                        raise ControlError("%s: no key %r of account %r" % (name, spec.get("kid"), spec.get("email")))
                    key.published = published
            for spec in body.get("rotate", []):
                account = self.accounts.get(spec.get("email"))
                if account is None:
                    raise ControlError("rotate: unknown account %r" % (spec.get("email"),))
                if not spec.get("keepOld", True):
                    for k in account.keys:
                        if k.type == "SYSTEM_MANAGED":
                            k.published = False
                    account.keys = [k for k in account.keys if k.published]
                new = Key("SYSTEM_MANAGED")
                account.keys.append(new)
                account.current = new
            if "tokenLifetimeSec" in body:
                value = body["tokenLifetimeSec"]
                if value is not None and (not isinstance(value, int) or value < 0):
                    raise ControlError("tokenLifetimeSec must be a non-negative integer or null")
                self.token_lifetime = value
            if "metadata" in body:
                md = body["metadata"]
                unknown = set(md) - {"email", "projectId", "numericProjectId", "scopes", "universeDomain"}
                if unknown:
                    raise ControlError("unknown metadata keys: %s" % sorted(unknown))
                self.metadata.update(md)
                self.ensure_account(self.metadata["email"], None)
            if "publicKeysMaxAgeSec" in body:
                self.public_keys_max_age = int(body["publicKeysMaxAgeSec"])
            for kind, fault in body.get("faults", {}).items():
                if kind not in KINDS:
                    raise ControlError("fault kind must be one of %s: %r" % (", ".join(KINDS), kind))
                if fault is None:
                    self.faults.pop(kind, None)
                    continue
                unknown = set(fault) - {"status", "count", "retryAfter", "delayMs", "mode", "account"}
                if unknown:
                    raise ControlError("unknown fault keys: %s" % sorted(unknown))
                if fault.get("mode") not in (None, "unpublishedKey", "otherAccount", "noKid"):
                    raise ControlError("fault mode must be unpublishedKey, otherAccount or noKid")
                if fault.get("mode") and kind not in ("signJwt", "signBlob"):
                    raise ControlError("fault modes apply to signJwt and signBlob only")
                count = fault.get("count", 1 if "status" in fault else -1)
                if not isinstance(count, int) or count == 0 or count < -1:
                    raise ControlError("fault count must be a positive integer (or -1 for unlimited)")
                self.faults[kind] = {"status": fault.get("status"), "count": count,
                                     "retryAfter": fault.get("retryAfter", 1), "delayMs": fault.get("delayMs", 0),
                                     "mode": fault.get("mode"), "account": fault.get("account")}
            return self.snapshot()

    def snapshot(self) -> dict:
        with self.lock:
            return {
                "ok": True,
                "baseUrl": self.base_url,
                "stateDir": self.state_dir,
                "accounts": {e: {"uniqueId": a.unique_id, "projectId": a.project_id, "kid": a.current.kid,
                                 "keys": [{"kid": k.kid, "type": k.type, "published": k.published} for k in a.keys],
                                 "keyFile": a.key_file}
                             for e, a in self.accounts.items()},
                "authorizedUsers": dict(self.user_files),
                "grants": {p: sorted(t) for p, t in self.grants.items()},
                "metadata": dict(self.metadata),
                "faults": {k: dict(v) for k, v in self.faults.items()},
                "tokenLifetimeSec": self.token_lifetime,
            }


def write_private_json(path, obj):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as f:
        json.dump(obj, f, indent=2)
        f.write("\n")


class Reply(Exception):
    """Raised by a handler to answer at once."""

    def __init__(self, status, body, content_type="application/json; charset=UTF-8", headers=None):
        super().__init__(status)
        self.status = status
        self.body = body
        self.content_type = content_type
        self.headers = headers or {}


def google_error(status, message=None, reason=None, domain=None, metadata=None, headers=None):
    error = {"code": status, "message": message or STATUS_MESSAGES.get(status, "Error"),
             "status": STATUS_NAMES.get(status, "UNKNOWN")}
    if reason:
        error["details"] = [{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": reason,
                             "domain": domain or "googleapis.com", "metadata": metadata or {}}]
    return Reply(status, {"error": error}, headers=headers)


def oauth_error(status, error, description, headers=None):
    return Reply(status, {"error": error, "error_description": description}, headers=headers)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_name = "ESF"  # the Server header Google's API front ends send
    state: State = None
    verbose = False

    # --- plumbing -----------------------------------------------------------------------------------
    def version_string(self):
        return self.server_name

    def log_message(self, fmt, *args):
        if self.verbose:
            sys.stderr.write("standin: " + (fmt % args) + "\n")

    def read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks, total = [], 0
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                total += size
                if total > MAX_BODY:
                    raise Reply(413, {"error": "body too large"})
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise Reply(413, {"error": "body too large"})
        return self.rfile.read(length) if length else b""

    def send(self, status, body, content_type, headers):
        if isinstance(body, (dict, list)):
            data = json.dumps(body, indent=2).encode("utf-8") + b"\n"
        elif isinstance(body, str):
            data = body.encode("utf-8")
        else:
            data = body or b""
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def do_GET(self):
        self.dispatch()

    def do_POST(self):
        self.dispatch()

    def do_HEAD(self):
        self.dispatch()

    def do_PUT(self):
        self.dispatch()

    def do_DELETE(self):
        self.dispatch()

    def dispatch(self):
        url = urllib.parse.urlsplit(self.path)
        self.url_path = url.path
        self.query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        self.kind = None
        self.principal = None
        self.target = None
        extra_headers = {}
        self.server_name = "ESF"
        try:
            body = self.read_body()
            route = self.route()
            if route is None:
                raise Reply(404, {"error": {"code": 404, "message": "Not Found", "status": "NOT_FOUND"}})
            self.kind, handler = route
            if self.kind == "metadata":
                extra_headers = {"Metadata-Flavor": "Google"}
                self.server_name = "Metadata Server for VM"
            handler(body)
            raise Reply(500, {"error": "handler did not answer"})
        except Reply as r:
            headers = dict(extra_headers)
            headers.update(r.headers)
            if self.kind in KINDS:
                self.state.record(self.kind, self.command, self.path, r.status, self.principal, self.target)
            self.send(r.status, r.body, r.content_type, headers)
        except Exception:  # a bug in the stand-in: answer 500 and say why on stderr
            traceback.print_exc(file=sys.stderr)
            if self.kind in KINDS:
                self.state.record(self.kind, self.command, self.path, 500, self.principal, self.target)
            self.send(500, {"error": {"code": 500, "message": "stand-in failure", "status": "INTERNAL"}},
                      "application/json; charset=UTF-8", extra_headers)

    def route(self):
        p, m = self.url_path, self.command
        if p == "/_control" or p.startswith("/_control/"):
            return "control", self.handle_control
        if p == "/" or p.startswith("/computeMetadata"):
            return "metadata", self.handle_metadata
        if p in ("/token", "/o/oauth2/token", "/oauth2/v4/token") and m == "POST":
            return "token", self.handle_token
        if p == "/v1/token" and m == "POST":
            return "sts", self.handle_sts
        match = re.match(r"^/v1/projects/([^/]+)/serviceAccounts/([^/:]+):(signJwt|signBlob|generateAccessToken)$", p)
        if match and m == "POST":
            self.iam_email = urllib.parse.unquote(match.group(2))
            return match.group(3), self.handle_iam
        match = re.match(r"^/(?:service_accounts/v1|robot/v1/metadata)/(jwk|metadata/x509|x509)/([^/]+)$", p)
        if match and m in ("GET", "HEAD"):
            self.key_format = "jwk" if match.group(1) == "jwk" else "x509"
            self.target = urllib.parse.unquote(match.group(2))
            return "publicKeys", self.handle_public_keys
        return None

    def fault_gate(self, error_reply):
        """Apply the active fault of this kind; return it (for its mode) or None."""
        fault = self.state.take_fault(self.kind)
        if fault is None:
            return None
        if fault.get("delayMs"):
            time.sleep(fault["delayMs"] / 1000.0)
        status = fault.get("status")
        if status:
            reply = error_reply(status)
            if status in (429, 503):
                reply.headers["Retry-After"] = str(fault.get("retryAfter", 1))
            raise reply
        return fault

    # --- control ------------------------------------------------------------------------------------
    def handle_control(self, body):
        if not self.client_address[0].startswith("127."):
            raise Reply(403, {"error": "control is loopback only"})
        if self.url_path == "/_control/calls" and self.command == "GET":
            with self.state.lock:
                raise Reply(200, {"calls": json.loads(json.dumps(self.state.calls)), "log": list(self.state.log)})
        if self.url_path == "/_control" and self.command == "GET":
            raise Reply(200, self.state.snapshot())
        if self.url_path == "/_control" and self.command == "POST":
            try:
                request = json.loads(body or b"{}")
                if not isinstance(request, dict):
                    raise ControlError("control body must be a JSON object")
                raise Reply(200, self.state.apply_control(request))
            except (ControlError, ValueError, TypeError, AttributeError) as e:
                raise Reply(400, {"ok": False, "error": str(e)})
        raise Reply(404, {"error": "control: GET /_control, POST /_control, GET /_control/calls"})

    # --- metadata -----------------------------------------------------------------------------------
    def handle_metadata(self, body):
        st = self.state
        text = "application/text"
        if self.headers.get("Metadata-Flavor") != "Google" or self.headers.get("X-Forwarded-For"):
            # Google's metadata server refuses requests without the header (and proxied ones) with 403.
            raise Reply(403, "Your client does not have permission to get URL <code>%s</code> from this server. "
                             "Missing Metadata-Flavor:Google header.\n" % self.url_path, "text/html; charset=UTF-8")
        self.fault_gate(lambda status: Reply(status, "Error %d\n" % status, text))
        if self.command not in ("GET", "HEAD", "POST"):
            raise Reply(405, "Method not allowed\n", text)
        p = self.url_path
        if p == "/":
            raise Reply(200, "computeMetadata/\n", text)
        if not p.startswith("/computeMetadata/v1/"):
            raise Reply(404, "Not Found\n", "text/html; charset=UTF-8")
        rest = p[len("/computeMetadata/v1/"):]
        recursive = self.query.get("recursive", ["false"])[0].lower() == "true"
        with st.lock:
            md = dict(st.metadata)
        email = md["email"]
        if rest == "project/project-id":
            raise Reply(200, md["projectId"], text)
        if rest == "project/numeric-project-id":
            raise Reply(200, str(md["numericProjectId"]), text)
        if rest == "universe/universe-domain":
            raise Reply(200, md["universeDomain"], text)
        if rest in ("instance/service-accounts", "instance/service-accounts/default"):
            location = "/computeMetadata/v1/" + rest + "/" + (("?" + urllib.parse.urlsplit(self.path).query)
                                                               if urllib.parse.urlsplit(self.path).query else "")
            raise Reply(301, "", text, {"Location": location})
        if rest == "instance/service-accounts/":
            if recursive:
                info = {"aliases": ["default"], "email": email, "scopes": md["scopes"]}
                raise Reply(200, {"default": info, email: info}, "application/json")
            raise Reply(200, "default/\n%s/\n" % email, text)
        match = re.match(r"^instance/service-accounts/([^/]+)/(.*)$", rest)
        if not match or urllib.parse.unquote(match.group(1)) not in ("default", email):
            raise Reply(404, "Not Found\n", "text/html; charset=UTF-8")
        self.principal = email
        leaf = match.group(2)
        if leaf == "":
            if recursive:
                raise Reply(200, {"aliases": ["default"], "email": email, "scopes": md["scopes"]}, "application/json")
            raise Reply(200, "aliases\nemail\nidentity\nscopes\ntoken\n", text)
        if leaf == "email":
            raise Reply(200, email, text)
        if leaf == "aliases":
            raise Reply(200, "default\n", text)
        if leaf == "scopes":
            raise Reply(200, "".join(s + "\n" for s in md["scopes"]), text)
        if leaf == "token":
            requested = self.query.get("scopes", [""])[0]
            scopes = [s for s in requested.split(",") if s] or md["scopes"]
            with st.lock:
                token, lifetime, _ = st.issue_token(email, scopes)
            raise Reply(200, {"access_token": token, "expires_in": lifetime, "token_type": "Bearer"},
                        "application/json")
        raise Reply(404, "Not Found\n", "text/html; charset=UTF-8")

    # --- OAuth token endpoint -----------------------------------------------------------------------
    def form(self, body):
        ctype = self.headers.get("Content-Type", "")
        if "application/json" in ctype:
            try:
                data = json.loads(body or b"{}")
                return {k: (v if isinstance(v, str) else json.dumps(v)) for k, v in data.items()}
            except ValueError:
                raise oauth_error(400, "invalid_request", "Invalid JSON body") from None
        parsed = urllib.parse.parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
        return {k: v[0] for k, v in parsed.items()}

    def oauth_fault(self, status):
        error, description = OAUTH_FAULT_ERRORS.get(status, ("server_error", "Error %d" % status))
        return oauth_error(status, error, description)

    def handle_token(self, body):
        st = self.state
        self.fault_gate(self.oauth_fault)
        form = self.form(body)
        grant = form.get("grant_type")
        if not grant:
            raise oauth_error(400, "invalid_request", "Missing required parameter: grant_type")
        if grant == JWT_BEARER:
            self.jwt_bearer(form.get("assertion", ""))
        if grant == "refresh_token":
            self.refresh_grant(form)
        raise oauth_error(400, "unsupported_grant_type", "Invalid grant_type: " + grant)

    def jwt_bearer(self, assertion):
        st = self.state
        parts = assertion.split(".")
        if len(parts) != 3:
            raise oauth_error(400, "invalid_request", "Invalid JWT: Token must be a short-lived token "
                                                      "(60 minutes) and in a reasonable timeframe.")
        try:
            header = json.loads(b64url_decode(parts[0]))
            claims = json.loads(b64url_decode(parts[1]))
            signature = b64url_decode(parts[2])
        except (ValueError, TypeError):
            raise oauth_error(400, "invalid_grant", "Invalid JWT format.") from None
        iss = claims.get("iss")
        self.principal = iss
        with st.lock:
            account = st.accounts.get(iss)
            keys = list(account.published_keys()) if account else []
        if account is None:
            raise oauth_error(400, "invalid_grant", "Invalid grant: account not found")
        if header.get("alg") != "RS256":
            raise oauth_error(400, "invalid_grant", "Invalid JWT Signature.")
        if header.get("kid"):
            keys = [k for k in keys if k.kid == header["kid"]]
        signed = (parts[0] + "." + parts[1]).encode("ascii")
        if not any(k.verify(signature, signed) for k in keys):
            raise oauth_error(400, "invalid_grant", "Invalid JWT Signature.")
        if claims.get("aud") not in GOOGLE_TOKEN_AUDIENCES + (st.base_url + "/token",):
            raise oauth_error(400, "invalid_grant", "Invalid JWT: Failed audience check. "
                                                    "The right audience is https://oauth2.googleapis.com/token")
        now = time.time()
        iat, exp = claims.get("iat"), claims.get("exp")
        if (not isinstance(iat, (int, float)) or not isinstance(exp, (int, float)) or exp <= now
                or iat > now + 300 or exp - iat > 3600 or exp > now + 3600 + 300):
            raise oauth_error(400, "invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) "
                                                    "and in a reasonable timeframe. Check your iat and exp values "
                                                    "in the JWT claim.")
        if claims.get("sub") not in (None, iss):
            raise oauth_error(401, "unauthorized_client", "Client is unauthorized to retrieve access tokens using "
                                                          "this method, or client not authorized for any of the "
                                                          "scopes requested.")
        scopes = [s for s in str(claims.get("scope", "")).split(" ") if s]
        if not scopes:
            raise oauth_error(400, "invalid_scope", "Invalid OAuth scope or ID token audience provided.")
        with st.lock:
            token, lifetime, _ = st.issue_token(iss, scopes)
        raise Reply(200, {"access_token": token, "expires_in": lifetime, "token_type": "Bearer"})

    def refresh_grant(self, form):
        st = self.state
        cid, secret, rt = form.get("client_id"), form.get("client_secret"), form.get("refresh_token")
        with st.lock:
            known_secret = st.clients.get(cid)
            entry = st.refresh_tokens.get(rt)
        if not cid or known_secret is None:
            raise oauth_error(401, "invalid_client", "The OAuth client was not found.")
        if secret != known_secret:
            raise oauth_error(401, "invalid_client", "Unauthorized")
        if entry is None or entry["clientId"] != cid:
            raise oauth_error(400, "invalid_grant", "Bad Request")
        self.principal = entry["email"]
        scopes = entry["scopes"]
        requested = [s for s in form.get("scope", "").split(" ") if s]
        if requested:
            if not set(requested) <= set(scopes):
                raise oauth_error(400, "invalid_scope", "Bad Request")
            scopes = requested
        with st.lock:
            token, lifetime, _ = st.issue_token(entry["email"], scopes)
        raise Reply(200, {"access_token": token, "expires_in": lifetime, "scope": " ".join(scopes),
                          "token_type": "Bearer"})

    # --- STS ------------------------------------------------------------------------------------------
    def handle_sts(self, body):
        st = self.state
        self.fault_gate(self.oauth_fault)
        form = self.form(body)
        if form.get("grant_type") != TOKEN_EXCHANGE:
            raise oauth_error(400, "unsupported_grant_type", "Invalid value for \"grant_type\". Expected "
                                                             "\"%s\"." % TOKEN_EXCHANGE)
        if form.get("requested_token_type") != ACCESS_TOKEN_TYPE:
            raise oauth_error(400, "invalid_request", "Invalid value for \"requested_token_type\": expected \"%s\"."
                              % ACCESS_TOKEN_TYPE)
        if form.get("subject_token_type") not in SUBJECT_TOKEN_TYPES:
            raise oauth_error(400, "invalid_request", "Invalid value for \"subject_token_type\".")
        if not form.get("subject_token"):
            raise oauth_error(400, "invalid_request", "The subject token is missing.")
        audience = form.get("audience", "")
        with st.lock:
            provider = st.providers.get(audience)
            subject = provider["subjects"].get(form["subject_token"]) if provider else None
        if provider is None:
            raise oauth_error(400, "invalid_target", "The target service indicated by the \"audience\" parameters "
                                                     "is invalid. This might either be because the pool or provider "
                                                     "is disabled or deleted or because it doesn't exist.")
        if subject is None:
            raise oauth_error(400, "invalid_grant", "The subject token is invalid or was not issued for this "
                                                    "provider.")
        match = re.match(r"^//iam\.googleapis\.com/(projects/[^/]+/locations/[^/]+/workloadIdentityPools/[^/]+)/providers/",
                         audience)
        pool = match.group(1) if match else audience.lstrip("/").split("/", 1)[-1]
        principal = "principal://iam.googleapis.com/%s/subject/%s" % (pool, subject)
        self.principal = principal
        scopes = [s for s in form.get("scope", "").split(" ") if s]
        with st.lock:
            token, lifetime, _ = st.issue_token(principal, scopes)
        raise Reply(200, {"access_token": token, "issued_token_type": ACCESS_TOKEN_TYPE,
                          "token_type": "Bearer", "expires_in": lifetime})

    # --- IAM Service Account Credentials ----------------------------------------------------------------
    def handle_iam(self, body):
        st = self.state
        permission, method = IAM_METHODS[self.kind]
        target = self.iam_email
        self.target = target
        service_meta = {"service": "iamcredentials.googleapis.com",
                        "method": "google.iam.credentials.v1.IAMCredentials." + method}
        denied = lambda perm=permission: google_error(
            403, "Permission '%s' denied on resource (or it may not exist)." % perm,
            "IAM_PERMISSION_DENIED", "iam.googleapis.com", {"permission": perm})

        # Who is calling (recorded even when a fault answers).
        auth = self.headers.get("Authorization", "")
        token = auth[7:].strip() if auth[:7].lower() == "bearer " else ""
        with st.lock:
            info = st.tokens.get(token) if token else None
        if info is not None:
            self.principal = info["principal"]

        def fault_reply(status):
            if status == 403:
                return denied()
            if status == 401:
                return google_error(401, "Request had invalid authentication credentials. Expected OAuth 2 access "
                                         "token, login cookie or other valid authentication credential. " + AUTH_HELP,
                                    "ACCESS_TOKEN_TYPE_UNSUPPORTED", "googleapis.com", service_meta,
                                    {"WWW-Authenticate": 'Bearer realm="https://accounts.google.com/"'})
            return google_error(status)

        fault = self.fault_gate(fault_reply)

        www = 'Bearer realm="https://accounts.google.com/"'
        if not token:
            raise google_error(401, "Request is missing required authentication credential. Expected OAuth 2 access "
                                    "token, login cookie or other valid authentication credential. " + AUTH_HELP,
                               "CREDENTIALS_MISSING", "googleapis.com", service_meta, {"WWW-Authenticate": www})
        if info is None:
            raise google_error(401, "Request had invalid authentication credentials. Expected OAuth 2 access token, "
                                    "login cookie or other valid authentication credential. " + AUTH_HELP,
                               "ACCESS_TOKEN_TYPE_UNSUPPORTED", "googleapis.com", service_meta,
                               {"WWW-Authenticate": www + ', error="invalid_token"'})
        if info["exp"] <= time.time():
            raise google_error(401, "Request had invalid authentication credentials. Expected OAuth 2 access token, "
                                    "login cookie or other valid authentication credential. " + AUTH_HELP,
                               "ACCESS_TOKEN_EXPIRED", "googleapis.com", service_meta,
                               {"WWW-Authenticate": www + ', error="invalid_token"'})
        if not ({SCOPE_CLOUD, SCOPE_IAM} & set(info["scopes"])):
            raise google_error(403, "Request had insufficient authentication scopes.",
                               "ACCESS_TOKEN_SCOPE_INSUFFICIENT", "googleapis.com", service_meta,
                               {"WWW-Authenticate": www + ', error="insufficient_scope", scope="%s %s"'
                                                    % (SCOPE_IAM, SCOPE_CLOUD)})
        try:
            request = json.loads(body or b"{}")
            if not isinstance(request, dict):
                raise ValueError
        except ValueError:
            raise google_error(400, "Invalid JSON payload received.") from None

        # Permission: caller -> delegates... -> target, each hop holding Token Creator on the next.
        chain = [info["principal"]]
        for delegate in request.get("delegates") or []:
            m = re.match(r"^projects/-/serviceAccounts/(.+)$", str(delegate))
            if not m:
                raise google_error(400, "Delegates must be of the form projects/-/serviceAccounts/{ACCOUNT}.")
            chain.append(m.group(1))
        chain.append(target)
        with st.lock:
            for i in range(len(chain) - 1):
                if not st.may_act_as(chain[i], chain[i + 1]):
                    last_hop = i == len(chain) - 2
                    raise denied(permission if last_hop else "iam.serviceAccounts.implicitDelegation")
            account = st.accounts[target]

        if self.kind == "generateAccessToken":
            self.generate_access_token(request, account)
        key, kid = self.signing_key(account, fault)
        if self.kind == "signBlob":
            try:
                payload = base64.b64decode(request.get("payload") or "", validate=True)
            except (ValueError, TypeError):
                raise google_error(400, "Invalid value at 'payload' (TYPE_BYTES), Base64 decoding failed.") from None
            raise Reply(200, {"keyId": kid, "signedBlob": base64.b64encode(key.sign(payload)).decode("ascii")})
        # signJwt
        text = request.get("payload")
        try:
            claims = json.loads(text) if isinstance(text, str) else None
        except ValueError:
            claims = None
        if not isinstance(claims, dict):
            raise google_error(400, "Invalid JWT payload: it must be a JSON object.")
        now = time.time()
        if "exp" in claims:
            exp = claims["exp"]
            if not isinstance(exp, int) or isinstance(exp, bool) or exp < now or exp > now + 12 * 3600:
                raise google_error(400, "Invalid JWT payload: exp must be an integer timestamp that is not in the "
                                        "past and no more than 12 hours in the future.")
            payload_bytes = text.encode("utf-8")
        else:
            claims["exp"] = int(now) + 3600  # as Google: an exp one hour ahead is added when absent
            payload_bytes = json.dumps(claims, separators=(",", ":")).encode("utf-8")
        header = {"alg": "RS256", "kid": kid, "typ": "JWT"}
        if fault and fault.get("mode") == "noKid":
            header = {"alg": "RS256", "typ": "JWT"}
        signing_input = b64url(json.dumps(header, separators=(",", ":")).encode("utf-8")) + "." + b64url(payload_bytes)
        jwt = signing_input + "." + b64url(key.sign(signing_input.encode("ascii")))
        raise Reply(200, {"keyId": kid, "signedJwt": jwt})

    def signing_key(self, account, fault):
        mode = fault.get("mode") if fault else None
        with self.state.lock:
            if mode == "unpublishedKey":
                key = account.rogue()
                return key, key.kid
            if mode == "otherAccount":
                other = self.state.accounts.get(fault.get("account") or "")
                if other is None:
                    others = [a for e, a in self.state.accounts.items() if e != account.email]
                    if not others:
                        raise google_error(500, "otherAccount fault: no other account is registered")
                    other = others[0]
                return other.current, other.current.kid
            return account.current, account.current.kid

    def generate_access_token(self, request, account):
        scopes = request.get("scope") or []
        if isinstance(scopes, str):
            scopes = [scopes]
        if not scopes:
            raise google_error(400, "Scope required.")
        lifetime_text = str(request.get("lifetime") or "3600s")
        m = re.match(r"^(\d+)(?:\.\d+)?s$", lifetime_text)
        if not m:
            raise google_error(400, "Invalid value at 'lifetime' (type.googleapis.com/google.protobuf.Duration), "
                                    "Field 'lifetime', Illegal duration format; duration must end with 's'")
        lifetime = int(m.group(1))
        if lifetime < 1 or lifetime > 3600:
            raise google_error(400, "The lifetime must be between 1s and 3600s (longer lifetimes need the "
                                    "iam.allowServiceAccountCredentialLifetimeExtension organization policy).")
        with self.state.lock:
            token, _, exp = self.state.issue_token(account.email, scopes, lifetime)
        raise Reply(200, {"accessToken": token, "expireTime": rfc3339(exp)})

    # --- public keys ----------------------------------------------------------------------------------
    def handle_public_keys(self, body):
        st = self.state
        self.fault_gate(lambda status: google_error(status))
        with st.lock:
            account = st.accounts.get(self.target)
            keys = list(account.published_keys()) if account else []
            max_age = st.public_keys_max_age
        if account is None:
            raise google_error(404, "Not Found")
        headers = {"Cache-Control": "public, max-age=%d, must-revalidate, no-transform" % max_age}
        if self.key_format == "jwk":
            raise Reply(200, {"keys": [k.jwk() for k in keys]}, headers=headers)
        raise Reply(200, {k.kid: k.cert_pem(account.email) for k in keys}, headers=headers)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--max-seconds", type=float, default=1800.0,
                        help="stop by itself after this many seconds (0: never)")
    parser.add_argument("--exit-on-stdin-eof", action="store_true",
                        help="stop when stdin reaches end of file (the parent went away)")
    parser.add_argument("--port-file",
                        help="also write the port to this file (written whole, then renamed into place)")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()

    os.makedirs(args.state_dir, exist_ok=True)
    state = State(os.path.abspath(args.state_dir))
    Handler.state = state
    Handler.verbose = args.verbose
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    port = server.server_address[1]
    state.base_url = "http://127.0.0.1:%d" % port

    stopping = threading.Event()

    def stop(*_):
        if not stopping.is_set():
            stopping.set()
            threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    if args.max_seconds > 0:
        timer = threading.Timer(args.max_seconds, stop)
        timer.daemon = True
        timer.start()
    if args.exit_on_stdin_eof:
        def watch_stdin():
            fd = sys.stdin.fileno()  # raw reads: a buffered reader's lock would trouble interpreter shutdown
            try:
                while os.read(fd, 4096):
                    pass
            except OSError:
                pass
            stop()
        threading.Thread(target=watch_stdin, daemon=True).start()

    sys.stdout.write(json.dumps({"port": port}) + "\n")
    sys.stdout.flush()
    if args.port_file:
        with open(args.port_file + ".tmp", "w") as f:
            f.write("%d\n" % port)
        os.rename(args.port_file + ".tmp", args.port_file)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()


if __name__ == "__main__":
    main()
