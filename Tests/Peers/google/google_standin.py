#!/usr/bin/env python3
"""Loopback stand-in for the Google endpoints a keyless (ADC + IAM signJwt) signer talks to.

Start:  python3 google_standin.py --state-dir DIR [--port 0] [--mtls-port 0] [--port-file F] [--mtls-port-file F]
                                  [--max-seconds 1800] [--exit-on-stdin-eof] [--verbose]
It binds 127.0.0.1 only and prints exactly one first line to stdout, then flushes:
    {"port": N, "mtlsPort": M}
Every endpoint below is served on port N (base URL http://127.0.0.1:N) and again, with mutual TLS, on port M (base
URL https://127.0.0.1:M, the stand-in's sts.mtls/iamcredentials.mtls): there the client must present a certificate
that chains to DIR/x509/ca.pem or DIR/x509/untrusted-ca.pem, else the TLS handshake fails. The server certificate
(IP 127.0.0.1, DNS localhost) is issued by DIR/x509/ca.pem. --port-file/--mtls-port-file also write N/M there
(written whole, then renamed into place). Keys are generated at start and on demand; nothing is read from or sent
off loopback. Stop it with SIGTERM (or SIGINT); it also stops by itself after --max-seconds (default 1800) and,
with --exit-on-stdin-eof, when its stdin closes.
At start these are registered:
  * the metadata server's account standin-default@standin-project.iam.gserviceaccount.com (project
    "standin-project", number 100000000001, scope cloud-platform); it holds no grant until given one.
  * the AWS identity ASIASTANDIN000000001 (random secret and session token, ARN
    arn:aws:sts::111122223333:assumed-role/standin-role/i-0123456789abcdef0), served by the AWS metadata service
    as role "standin-role" in availability zone us-east-1b, IMDSv2 required.
  * the X.509 client "workload" (common name tokengate-workload, issued by DIR/x509/ca.pem): DIR/x509/workload/
    cert.pem, key.pem (mode 0600) and certificate_config.json, Google's certificate configuration file:
        {"cert_configs": {"workload": {"cert_path": ".../cert.pem", "key_path": ".../key.pem"}}}

Endpoints (each follows Google's, or AWS's, REST reference; "kind" is the name used by faults and call counts)
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
  kind awsMetadata  AWS EC2 instance metadata service (IMDS; clients: the credential_source URLs
                    http://127.0.0.1:N/latest/..., where AWS has http://169.254.169.254/latest/...). Text answers
                    are `text/plain`, Server `EC2ws`.
      PUT /latest/api/token   header X-aws-ec2-metadata-token-ttl-seconds: 1..21600 (else 400; X-Forwarded-For: 403)
                              -> the IMDSv2 session token (text), header X-Aws-Ec2-Metadata-Token-Ttl-Seconds
      GET /latest/meta-data/placement/availability-zone        "us-east-1b"
      GET /latest/meta-data/placement/region                   "us-east-1"
      GET /latest/meta-data/iam/security-credentials[/]         the role name (404 when no role is attached)
      GET /latest/meta-data/iam/security-credentials/{role}    {"Code":"Success","LastUpdated","Type":"AWS-HMAC",
                                                                "AccessKeyId","SecretAccessKey","Token","Expiration"}
                    A GET with header X-aws-ec2-metadata-token needs a live token of this service (else 401); without
                    one it is answered only while IMDSv2 is optional (else 401).
  kind token        POST /token  (aliases /o/oauth2/token, /oauth2/v4/token), form-encoded:
                    grant_type=urn:ietf:params:oauth:grant-type:jwt-bearer&assertion=<RS256 JWT>
                    grant_type=refresh_token&client_id=..&client_secret=..&refresh_token=..[&scope=..]
                    -> 200 {"access_token","expires_in","token_type":"Bearer","scope"?}
                    -> 400/401 {"error":"invalid_grant|invalid_client|invalid_scope|...","error_description":..}
  kind sts          POST /v1/token  RFC 8693 token exchange (form or JSON) ->
                    {"access_token","issued_token_type","token_type":"Bearer","expires_in"}
                    The audience must be a registered provider (else 400 invalid_target). By subject_token_type:
                    ..:oauth:token-type:jwt|id_token|saml2|access_token: the token must be a key of the provider's
                      "subjects" (else 400 invalid_grant); the subject is its value.
                    ..:aws:token-type:aws4_request: the token is the URL-encoded JSON (%20 or + for a space) of a
                      signed AWS STS GetCallerIdentity request,
                      {"url","method":"POST","headers":[{"key","value"},..][,"body"]}:
                      url https://sts[-fips].REGION.amazonaws.com[/]?Action=GetCallerIdentity&Version=2011-06-15
                      (or https://sts.amazonaws.com..., region us-east-1), headers Authorization (AWS4-HMAC-SHA256,
                      host and x-amz-date signed), host (= the URL's), x-amz-date, x-amz-security-token (with a
                      session), x-goog-cloud-target-resource (= the audience, "https:" prefix allowed; need not be
                      signed). Not so: 400 invalid_request "AWS request has invalid format." The stand-in then does
                      what AWS does with it (aws_sigv4.py): a registered access key (InvalidClientTokenId), its
                      session token sent and current (InvalidClientTokenId, ExpiredToken), scope service sts and the
                      URL's region (SignatureDoesNotMatch), x-amz-date within 15 min, the signature verified with
                      the registered secret (SignatureDoesNotMatch); a refusal is 400 invalid_grant "Received
                      invalid AWS response of type CODE with error message: MESSAGE". The caller's ARN must be in
                      the provider's AWS account when it names one (400 invalid_grant). Subject: subjects[ARN],
                      else the ARN (Google's default mapping google.subject=assertion.arn).
                    ..:oauth:token-type:mtls (mTLS port only, else 400 invalid_request): the token is the JSON array
                      of base64 DER certificates google-auth sends, leaf first, then the trust chain; the leaf must be
                      the TLS client certificate and the chain must lead to DIR/x509/ca.pem (an untrusted-ca.pem
                      chain: 400 invalid_grant). Subject: subjects[leaf CN], else the leaf's common name (Google's
                      default mapping google.subject=assertion.subject.dn.cn).
                    "options" (JSON, or percent-encoded JSON as google-auth sends it, e.g. {"userProject": ".."})
                    is logged decoded. Bad options: 400 invalid_request.
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
  kind mtlsHandshake  not an endpoint: each TLS handshake on port M, counted "ok" or "refused" in byStatus
                    (principal: the client certificate's common name); logged as {"kind":"mtlsHandshake",
                    "method":"TLS","path":"","status":"ok"|"refused","principal", "version" | "error" (OpenSSL's
                    reason)}; no faults.

Principals (what an access token was issued to; the keys of "grants" and of byPrincipal in call counts)
  service account          its email (metadata token, JWT-bearer grant, generateAccessToken)
  authorized user          the "email" given when registering it (refresh_token grant)
  workload identity        principal://iam.googleapis.com/projects/N/locations/global/workloadIdentityPools/POOL/subject/SUBJECT
                           (N and POOL from the STS audience, SUBJECT as the sts kind says)
  workforce identity       principal://iam.googleapis.com/locations/global/workforcePools/POOL/subject/SUBJECT
                           (audience //iam.googleapis.com/locations/global/workforcePools/POOL/providers/P)

Control (loopback only, never counted as calls)
  POST /_control  with one JSON object; every key optional, applied in this order; unknown keys -> 400:
    {"reset": ["calls","faults","grants","tokens"],   # tokens: access tokens and IMDSv2 session tokens
     "accounts": [{"email": "a@p.iam.gserviceaccount.com", "projectId": "p", "exportKeyFile": true}],
         # registers (idempotent) an account with one system-managed key; exportKeyFile adds a user-managed key
         # and writes DIR/<email>.json (type service_account, token_uri = this stand-in's /token, mode 0600)
     "authorizedUsers": [{"clientId": "c", "clientSecret": "s", "refreshToken": "r", "email": "u@example.com",
                          "scopes": ["https://www.googleapis.com/auth/cloud-platform"], "exportFile": true}],
         # exportFile writes DIR/authorized_user-<clientId>.json (no token_uri, like gcloud's ADC file)
     "workloadProviders": [{"audience": "//iam.googleapis.com/projects/123/locations/global/workloadIdentityPools/pool/providers/prov",
                            "subjects": {"<subject token as sent | AWS ARN | certificate CN>": "<subject>"},
                            "awsAccountId": "111122223333"}],   # optional: AWS callers of that account only
     "awsIdentities": [{"accessKeyId": "ASIA...", "secretAccessKey": "..", "sessionToken": ".." | null,
                        "arn": "arn:aws:sts::111122223333:assumed-role/ROLE/SESSION", "expired": false}],
         # registers an AWS identity, or updates the given fields of a registered one (by accessKeyId); expired
         # (needs a sessionToken): the session is over: STS refuses it (ExpiredToken) and IMDS serves it with an
         # Expiration in the past
     "awsMetadata": {"availabilityZone": "us-east-1b", "roleName": "standin-role" | null, "accessKeyId": "ASIA..",
                     "imdsv2": "required" | "optional"},
         # what the AWS metadata service serves: its zone, the attached role (null: none) and whose credentials
     "x509Clients": [{"name": "w2", "commonName": "tokengate-w2", "ca": "trusted" | "untrusted" | "unknown",
                      "intermediate": false, "expired": false, "keyType": "ec" | "rsa"}],
         # issues (replaces) a client certificate and writes DIR/x509/<name>/cert.pem, key.pem (0600),
         # certificate_config.json and, with intermediate, chain.pem (the trust_chain_path file). ca: trusted =
         # DIR/x509/ca.pem (STS accepts it); untrusted = DIR/x509/untrusted-ca.pem (TLS accepts it, STS refuses
         # it); unknown = a CA the server does not know (the TLS handshake fails). intermediate: issued by an
         # intermediate CA of that CA; cert.pem holds the leaf and the intermediate, chain.pem the intermediate.
         # expired: not valid after yesterday (the TLS handshake fails). keyType: P-256 (default) or RSA 2048.
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
     "faults": {"<kind>": <fault> | null}}   # kinds: metadata awsMetadata token sts signJwt signBlob
         # generateAccessToken publicKeys
         # <fault> = {"status": 403|429|500|503|..., "count": N, "retryAfter": S, "delayMs": D,
         #            "mode": "unpublishedKey"|"otherAccount"|"noKid"|"imdsv2Token", "account": "<other email>"}
         # A fault is active while count != 0; each call of that kind uses one count (count defaults to 1 with
         # "status", else unlimited). While active a call sleeps delayMs, then fails with status (Google's error
         # body for that endpoint; Retry-After: retryAfter (default 1) on 429/503), or else (signJwt, signBlob)
         # signs per mode: unpublishedKey = a key of the account that is in no JWKS; otherAccount = another
         # registered account's current key and kid ("account" picks it); noKid = header without kid (signJwt).
         # Mode imdsv2Token (awsMetadata): the fault applies to the IMDSv2 token PUT only (status defaults to 403).
    -> 200 the state (as GET /_control): {"ok": true, "baseUrl", "mtlsBaseUrl", "stateDir", "accounts": {email:
       {"uniqueId", "projectId", "kid" (current system key), "keys": [{"kid","type":"SYSTEM_MANAGED|USER_MANAGED",
       "published"}], "keyFile"}}, "authorizedUsers": {clientId: {"email","file"}}, "grants", "metadata", "faults",
       "tokenLifetimeSec", "aws": {"identities": {accessKeyId: {"secretAccessKey","sessionToken","arn","account",
       "expired"}}, "metadata": {"availabilityZone","roleName","accessKeyId","imdsv2"}}, "x509": {"caFile",
       "untrustedCaFile", "clients": {name: {"commonName","ca","certFile","keyFile","trustChainFile",
       "certificateConfigFile","sha256"}}}}
  GET /_control/calls -> {"calls": {kind: {"count", "byStatus": {"200": n}, "byPrincipal": {p: n}, "byTarget": {e: n}}},
                          "log": [{"seq","t","kind","method","path","status","principal","target",
                                   "userProject" (the x-goog-user-project header, or null), "mtls" (true on port M),
                                   "started" (when the request was read; "t" is when it was answered)
                                   [, "fault" (the fault it took)] [, signJwt only: "aud" (the claim set's)]
                                   [, sts only: "subjectTokenType", "options" (decoded, or null)]}, ...]}
                          (last 2000; principal of an awsMetadata credentials call or a refused AWS subject token:
                          the identity's ARN; of an mTLS one: the leaf's CN)
"""

import argparse
import base64
import collections
import datetime
import hashlib
import ipaddress
import json
import os
import re
import secrets
import signal
import ssl
import sys
import threading
import time
import traceback
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.x509.oid import NameOID

import aws_sigv4  # beside this file (python3 puts the script's directory first on sys.path)

KINDS = ("metadata", "awsMetadata", "token", "sts", "signJwt", "signBlob", "generateAccessToken", "publicKeys")
COUNTED = KINDS + ("mtlsHandshake",)  # call counts; mtlsHandshake takes no faults
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
AWS_TOKEN_TYPE = "urn:ietf:params:aws:token-type:aws4_request"
MTLS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:mtls"
SUBJECT_TOKEN_TYPES = {
    "urn:ietf:params:oauth:token-type:jwt",
    "urn:ietf:params:oauth:token-type:id_token",
    "urn:ietf:params:oauth:token-type:saml2",
    "urn:ietf:params:oauth:token-type:access_token",
    AWS_TOKEN_TYPE,
    MTLS_TOKEN_TYPE,
}
AWS_DEFAULT_IDENTITY = {
    "accessKeyId": "ASIASTANDIN000000001",
    "arn": "arn:aws:sts::111122223333:assumed-role/standin-role/i-0123456789abcdef0",
}
AWS_ARN = re.compile(r"^arn:aws[a-z-]*:(?:sts|iam)::(\d{12}):\S+$")
AWS_REGION = re.compile(r"^[a-z]{2}(?:-[a-z]+)+-\d$")
AWS_STS_HOST = re.compile(r"^sts(?:-fips)?(?:\.([a-z0-9-]+))?\.amazonaws\.com$")
AWS_INVALID_FORMAT = "AWS request has invalid format."
IMDS_MAX_TTL = 21600
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


def cn_of(cert) -> str:
    names = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return names[0].value if names else ""


def validity(cert):
    """(not before, not after) as aware UTC datetimes (cryptography before 42 has only the naive properties)."""
    if hasattr(cert, "not_valid_before_utc"):
        return cert.not_valid_before_utc, cert.not_valid_after_utc
    utc = datetime.timezone.utc
    return cert.not_valid_before.replace(tzinfo=utc), cert.not_valid_after.replace(tzinfo=utc)


def issued_by(cert, issuer) -> bool:
    """Whether issuer's key signed cert (names and signature; cryptography before 40 has no
    verify_directly_issued_by)."""
    if cert.issuer != issuer.subject:
        return False
    try:
        if hasattr(cert, "verify_directly_issued_by"):
            cert.verify_directly_issued_by(issuer)
            return True
        key = issuer.public_key()
        if isinstance(key, ec.EllipticCurvePublicKey):
            key.verify(cert.signature, cert.tbs_certificate_bytes, ec.ECDSA(cert.signature_hash_algorithm))
        else:
            key.verify(cert.signature, cert.tbs_certificate_bytes, padding.PKCS1v15(), cert.signature_hash_algorithm)
        return True
    except (ValueError, TypeError, InvalidSignature):
        return False


def cert_pem(cert) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def key_pem(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def write_private(path, data: bytes):
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as f:
        f.write(data)


class CA:
    """A certificate authority (P-256 root, or an intermediate under one)."""

    def __init__(self, name: str, parent=None):
        self.key = ec.generate_private_key(ec.SECP256R1())
        self.name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "TokenGate stand-in"),
                               x509.NameAttribute(NameOID.COMMON_NAME, name)])
        now = datetime.datetime.now(datetime.timezone.utc)
        issuer_name, issuer_key = (parent.name, parent.key) if parent else (self.name, self.key)
        builder = (x509.CertificateBuilder()
                   .subject_name(self.name).issuer_name(issuer_name)
                   .public_key(self.key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(days=1))
                   .not_valid_after(now + datetime.timedelta(days=3650))
                   .add_extension(x509.BasicConstraints(ca=True, path_length=None if parent is None else 0),
                                  critical=True)
                   .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False,
                                                key_encipherment=False, data_encipherment=False,
                                                key_agreement=False, key_cert_sign=True, crl_sign=True,
                                                encipher_only=False, decipher_only=False), critical=True)
                   .add_extension(x509.SubjectKeyIdentifier.from_public_key(self.key.public_key()), critical=False))
        if parent is not None:
            builder = builder.add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(parent.key.public_key()), critical=False)
        self.cert = builder.sign(issuer_key, hashes.SHA256())

    def issue(self, common_name: str, key, server=False, expired=False):
        now = datetime.datetime.now(datetime.timezone.utc)
        before, after = ((now - datetime.timedelta(days=30), now - datetime.timedelta(days=1)) if expired
                         else (now - datetime.timedelta(days=1), now + datetime.timedelta(days=365)))
        builder = (x509.CertificateBuilder()
                   .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name[:64])]))
                   .issuer_name(self.name)
                   .public_key(key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(before).not_valid_after(after)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
                   .add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.SERVER_AUTH if server
                                                         else x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]),
                                  critical=False)
                   .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(self.key.public_key()),
                                  critical=False))
        if server:
            builder = builder.add_extension(x509.SubjectAlternativeName([
                x509.IPAddress(ipaddress.ip_address("127.0.0.1")), x509.DNSName("localhost")]), critical=False)
        return builder.sign(self.key, hashes.SHA256())


class X509Authority:
    """The CAs, the server certificate of the mTLS port and the client certificates, in DIR/x509/."""

    def __init__(self, state_dir: str):
        self.dir = os.path.join(state_dir, "x509")
        os.makedirs(self.dir, exist_ok=True)
        self.cas = {"trusted": CA("TokenGate stand-in CA"), "untrusted": CA("TokenGate stand-in untrusted CA"),
                    "unknown": CA("A CA the stand-in does not know")}
        self.ca_file = os.path.join(self.dir, "ca.pem")
        self.untrusted_ca_file = os.path.join(self.dir, "untrusted-ca.pem")
        with open(self.ca_file, "wb") as f:
            f.write(cert_pem(self.cas["trusted"].cert))
        with open(self.untrusted_ca_file, "wb") as f:
            f.write(cert_pem(self.cas["untrusted"].cert))
        server_key = ec.generate_private_key(ec.SECP256R1())
        self.server_cert_file = os.path.join(self.dir, "server-cert.pem")
        self.server_key_file = os.path.join(self.dir, "server-key.pem")
        with open(self.server_cert_file, "wb") as f:
            f.write(cert_pem(self.cas["trusted"].issue("127.0.0.1", server_key, server=True)))
        write_private(self.server_key_file, key_pem(server_key))
        self.clients = {}

    def server_context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self.server_cert_file, self.server_key_file)
        context.verify_mode = ssl.CERT_REQUIRED  # a client certificate is required, from a CA the server knows
        context.load_verify_locations(cadata=(cert_pem(self.cas["trusted"].cert)
                                              + cert_pem(self.cas["untrusted"].cert)).decode("ascii"))
        return context

    def issue_client(self, spec: dict) -> dict:
        unknown = set(spec) - {"name", "commonName", "ca", "intermediate", "expired", "keyType"}
        if unknown:
            raise ControlError("unknown x509Clients keys: %s" % sorted(unknown))
        name = spec.get("name")
        if not isinstance(name, str) or not re.match(r"^[A-Za-z0-9._-]{1,64}$", name) or name.startswith("."):
            raise ControlError("x509Clients entry needs a name of letters, digits, '.', '_' or '-'")
        ca_name = spec.get("ca", "trusted")
        if ca_name not in self.cas:
            raise ControlError("x509Clients ca must be trusted, untrusted or unknown")
        key_type = spec.get("keyType", "ec")
        if key_type not in ("ec", "rsa"):
            raise ControlError("x509Clients keyType must be ec or rsa")
        common_name = spec.get("commonName") or "tokengate-" + name
        key = (ec.generate_private_key(ec.SECP256R1()) if key_type == "ec"
               else rsa.generate_private_key(public_exponent=65537, key_size=2048))
        issuer = self.cas[ca_name]
        intermediate = (CA("TokenGate stand-in intermediate CA (%s)" % ca_name, issuer)
                        if spec.get("intermediate") else None)
        leaf = (intermediate or issuer).issue(common_name, key, expired=bool(spec.get("expired")))
        directory = os.path.join(self.dir, name)
        os.makedirs(directory, exist_ok=True)
        info = {"commonName": common_name, "ca": ca_name, "certFile": os.path.join(directory, "cert.pem"),
                "keyFile": os.path.join(directory, "key.pem"), "trustChainFile": None,
                "certificateConfigFile": os.path.join(directory, "certificate_config.json"),
                "sha256": hashlib.sha256(leaf.public_bytes(serialization.Encoding.DER)).hexdigest()}
        with open(info["certFile"], "wb") as f:
            f.write(cert_pem(leaf) + (cert_pem(intermediate.cert) if intermediate else b""))
        write_private(info["keyFile"], key_pem(key))
        chain_file = os.path.join(directory, "chain.pem")
        if intermediate:
            with open(chain_file, "wb") as f:
                f.write(cert_pem(intermediate.cert))
            info["trustChainFile"] = chain_file
        elif os.path.exists(chain_file):
            os.unlink(chain_file)
        write_private_json(info["certificateConfigFile"],
                           {"cert_configs": {"workload": {"cert_path": info["certFile"], "key_path": info["keyFile"]}}})
        self.clients[name] = info
        return info

    def trusted_chain(self, certs) -> bool:
        """Whether certs (leaf first, then its chain in any order) lead to the trusted CA, every one current."""
        now = datetime.datetime.now(datetime.timezone.utc)
        root = self.cas["trusted"].cert
        current, pool = certs[0], list(certs[1:])
        for _ in range(len(certs) + 1):
            not_before, not_after = validity(current)
            if not not_before <= now <= not_after:
                return False
            for issuer in [root] + pool:
                if not issued_by(current, issuer):
                    continue
                if issuer is root:
                    return True
                pool.remove(issuer)
                current = issuer
                break
            else:
                return False
        return False


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
        self.providers = {}        # audience -> {"subjects": {token: subject}, "awsAccountId": str|None}
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
        self.base_url_mtls = ""
        self.aws_identities = {}   # accessKeyId -> {"secretAccessKey","sessionToken","arn","account","expired"}
        self.imds_tokens = {}      # IMDSv2 session token -> expiry (epoch)
        self.aws_metadata = {"availabilityZone": "us-east-1b", "roleName": "standin-role",
                             "accessKeyId": AWS_DEFAULT_IDENTITY["accessKeyId"], "imdsv2": "required"}
        # A secret like AWS's: 40 base64 characters ("/" and "+" included).
        self.put_aws_identity(dict(
            AWS_DEFAULT_IDENTITY, secretAccessKey=base64.b64encode(secrets.token_bytes(30)).decode(),
            sessionToken="IQoJb3JpZ2luX2VjE" + base64.b64encode(secrets.token_bytes(200)).decode()))
        self.x509 = X509Authority(state_dir)
        self.x509.issue_client({"name": "workload", "commonName": "tokengate-workload"})

    # --- AWS identities ---------------------------------------------------------------------------------
    def put_aws_identity(self, spec: dict):
        unknown = set(spec) - {"accessKeyId", "secretAccessKey", "sessionToken", "arn", "expired"}
        if unknown:
            raise ControlError("unknown awsIdentities keys: %s" % sorted(unknown))
        akid = spec.get("accessKeyId")
        if not isinstance(akid, str) or not re.match(r"^[A-Z0-9]{16,128}$", akid):
            raise ControlError("awsIdentities entry needs an accessKeyId (16-128 upper-case letters and digits)")
        identity = dict(self.aws_identities.get(akid) or {"sessionToken": None, "expired": False})
        for field in ("secretAccessKey", "arn"):
            if field in spec:
                if not isinstance(spec[field], str) or not spec[field]:
                    raise ControlError("awsIdentities %s must be a non-empty string" % field)
                identity[field] = spec[field]
            elif field not in identity:
                raise ControlError("awsIdentities entry for a new accessKeyId needs %s" % field)
        if "sessionToken" in spec:
            token = spec["sessionToken"]
            if token is not None and (not isinstance(token, str) or not token):
                raise ControlError("awsIdentities sessionToken must be a non-empty string or null")
            identity["sessionToken"] = spec["sessionToken"]
        if "expired" in spec:
            identity["expired"] = bool(spec["expired"])
        if identity["expired"] and not identity["sessionToken"]:
            raise ControlError("awsIdentities expired needs a sessionToken (long-term access keys do not expire)")
        match = AWS_ARN.match(identity["arn"])
        if not match:
            raise ControlError("awsIdentities arn must look like arn:aws:sts::123456789012:assumed-role/ROLE/SESSION")
        identity["account"] = match.group(1)
        self.aws_identities[akid] = identity

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
        self.calls = {k: {"count": 0, "byStatus": {}, "byPrincipal": {}, "byTarget": {}} for k in COUNTED}
        self.log.clear()

    def record(self, kind, method, path, status, principal, target, extra=None):
        with self.lock:
            self.seq += 1
            c = self.calls[kind]
            c["count"] += 1
            c["byStatus"][str(status)] = c["byStatus"].get(str(status), 0) + 1
            if principal:
                c["byPrincipal"][principal] = c["byPrincipal"].get(principal, 0) + 1
            if target:
                c["byTarget"][target] = c["byTarget"].get(target, 0) + 1
            entry = {"seq": self.seq, "t": round(time.time(), 3), "kind": kind, "method": method,
                     "path": path, "status": status, "principal": principal, "target": target}
            entry.update(extra or {})
            self.log.append(entry)

    def take_fault(self, kind, applies=None):
        """The active fault of this kind for one call (a copy), using one of its count; `applies(fault)` False:
        the fault is not for this call (it is neither used nor counted)."""
        with self.lock:
            fault = self.faults.get(kind)
            if fault is None or (applies is not None and not applies(fault)):
                return None
            if fault["count"] > 0:
                fault["count"] -= 1
                if fault["count"] == 0:
                    del self.faults[kind]
            return dict(fault)

    # --- control ------------------------------------------------------------------------------------
    def apply_control(self, body: dict):
        allowed = ("reset", "accounts", "authorizedUsers", "workloadProviders", "awsIdentities", "awsMetadata",
                   "x509Clients", "grants", "disableKeys", "enableKeys", "rotate", "tokenLifetimeSec", "metadata",
                   "publicKeysMaxAgeSec", "faults")
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
                    self.imds_tokens.clear()
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
                provider = self.providers.setdefault(audience, {"subjects": {}, "awsAccountId": None})
                provider["subjects"].update(subjects)
                if "awsAccountId" in spec:
                    account = spec["awsAccountId"]
                    if account is not None and not re.match(r"^\d{12}$", str(account)):
                        raise ControlError("workloadProviders awsAccountId must be 12 digits or null")
                    provider["awsAccountId"] = account
            for spec in body.get("awsIdentities", []):
                if not isinstance(spec, dict):
                    raise ControlError("awsIdentities entries must be objects")
                self.put_aws_identity(spec)
            if "awsMetadata" in body:
                md = body["awsMetadata"]
                unknown = set(md) - {"availabilityZone", "roleName", "accessKeyId", "imdsv2"}
                if unknown:
                    raise ControlError("unknown awsMetadata keys: %s" % sorted(unknown))
                if "availabilityZone" in md and not re.match(r"^[a-z0-9-]+[a-z]$", str(md["availabilityZone"])):
                    raise ControlError("awsMetadata availabilityZone must look like us-east-1b")
                role = md.get("roleName")
                if role is not None and not re.match(r"^[\w+=,.@-]{1,64}$", str(role)):
                    raise ControlError("awsMetadata roleName must be an IAM role name or null")
                if "accessKeyId" in md and md["accessKeyId"] not in self.aws_identities:
                    raise ControlError("awsMetadata accessKeyId must be a registered AWS identity")
                if "imdsv2" in md and md["imdsv2"] not in ("required", "optional"):
                    raise ControlError("awsMetadata imdsv2 must be required or optional")
                self.aws_metadata.update(md)
            for spec in body.get("x509Clients", []):
                if not isinstance(spec, dict):
                    raise ControlError("x509Clients entries must be objects")
                self.x509.issue_client(spec)
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
                if fault.get("mode") not in (None, "unpublishedKey", "otherAccount", "noKid", "imdsv2Token"):
                    raise ControlError("fault mode must be unpublishedKey, otherAccount, noKid or imdsv2Token")
                if fault.get("mode") == "imdsv2Token":
                    if kind != "awsMetadata":
                        raise ControlError("fault mode imdsv2Token applies to awsMetadata only")
                    fault = dict(fault, status=fault.get("status", 403))
                elif fault.get("mode") and kind not in ("signJwt", "signBlob"):
                    raise ControlError("fault modes unpublishedKey, otherAccount and noKid apply to signJwt and "
                                       "signBlob only")
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
                "mtlsBaseUrl": self.base_url_mtls,
                "aws": {"identities": {k: dict(v) for k, v in self.aws_identities.items()},
                        "metadata": dict(self.aws_metadata)},
                "x509": {"caFile": self.x509.ca_file, "untrustedCaFile": self.x509.untrusted_ca_file,
                         "clients": {k: dict(v) for k, v in self.x509.clients.items()}},
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
        # On the mTLS port: the client certificate (DER) the TLS handshake verified.
        self.client_cert = (self.connection.getpeercert(binary_form=True)
                            if isinstance(self.connection, ssl.SSLSocket) else None)
        self.log_extra = {"userProject": self.headers.get("x-goog-user-project"),
                          "mtls": isinstance(self.connection, ssl.SSLSocket), "started": round(time.time(), 3)}
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
            elif self.kind == "awsMetadata":
                self.server_name = "EC2ws"
            handler(body)
            raise Reply(500, {"error": "handler did not answer"})
        except Reply as r:
            headers = dict(extra_headers)
            headers.update(r.headers)
            if self.kind in KINDS:
                self.state.record(self.kind, self.command, self.path, r.status, self.principal, self.target,
                                  self.log_extra)
            self.send(r.status, r.body, r.content_type, headers)
        except Exception:  # a bug in the stand-in: answer 500 and say why on stderr
            traceback.print_exc(file=sys.stderr)
            if self.kind in KINDS:
                self.state.record(self.kind, self.command, self.path, 500, self.principal, self.target,
                                  self.log_extra)
            self.send(500, {"error": {"code": 500, "message": "stand-in failure", "status": "INTERNAL"}},
                      "application/json; charset=UTF-8", extra_headers)

    def route(self):
        p, m = self.url_path, self.command
        if p == "/_control" or p.startswith("/_control/"):
            return "control", self.handle_control
        if p == "/" or p.startswith("/computeMetadata"):
            return "metadata", self.handle_metadata
        if p.startswith("/latest/"):
            return "awsMetadata", self.handle_aws_metadata
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

    def fault_gate(self, error_reply, applies=None):
        """Apply the active fault of this kind (if `applies` to this call); return it (for its mode) or None."""
        fault = self.state.take_fault(self.kind, applies)
        if fault is None:
            return None
        self.log_extra["fault"] = fault
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

    # --- AWS EC2 instance metadata service -----------------------------------------------------------
    def handle_aws_metadata(self, body):
        st = self.state
        text = "text/plain"
        p, m = self.url_path, self.command
        is_token_put = p == "/latest/api/token" and m == "PUT"

        def imds_error(status):
            names = {400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
                     405: "Method Not Allowed"}
            return Reply(status, "%d - %s\n" % (status, names.get(status, "Error")), text)

        self.fault_gate(imds_error, lambda f: f.get("mode") != "imdsv2Token" or is_token_put)
        with st.lock:
            md = dict(st.aws_metadata)
        if p == "/latest/api/token":
            if m != "PUT":
                raise imds_error(405)
            if self.headers.get("X-Forwarded-For"):
                raise imds_error(403)
            ttl_text = self.headers.get("X-aws-ec2-metadata-token-ttl-seconds", "")
            if not re.match(r"^\d{1,6}$", ttl_text) or not 1 <= int(ttl_text) <= IMDS_MAX_TTL:
                raise imds_error(400)
            token = "AQAEA" + secrets.token_urlsafe(42)
            with st.lock:
                now = time.time()
                for old in [t for t, exp in st.imds_tokens.items() if exp <= now]:
                    del st.imds_tokens[old]
                st.imds_tokens[token] = now + int(ttl_text)
            raise Reply(200, token, text, {"X-Aws-Ec2-Metadata-Token-Ttl-Seconds": ttl_text})
        if m not in ("GET", "HEAD"):
            raise imds_error(405)
        session = self.headers.get("X-aws-ec2-metadata-token")
        if session is not None:
            with st.lock:
                exp = st.imds_tokens.get(session)
            if exp is None or exp <= time.time():
                raise imds_error(401)
        elif md["imdsv2"] == "required":
            raise imds_error(401)
        zone = md["availabilityZone"]
        if p == "/latest/meta-data/placement/availability-zone":
            raise Reply(200, zone, text)
        if p == "/latest/meta-data/placement/region":
            raise Reply(200, zone[:-1], text)
        role = md["roleName"]
        prefix = "/latest/meta-data/iam/security-credentials"
        if p in (prefix, prefix + "/"):
            if not role:
                raise imds_error(404)
            raise Reply(200, role, text)
        if p.startswith(prefix + "/"):
            if not role or urllib.parse.unquote(p[len(prefix) + 1:]) != role:
                raise imds_error(404)
            with st.lock:
                identity = dict(st.aws_identities[md["accessKeyId"]])
            self.principal, self.target = identity["arn"], role
            now = time.time()
            expires = now - 60 if identity["expired"] else now + 6 * 3600
            answer = {"Code": "Success", "LastUpdated": rfc3339(now - 60), "Type": "AWS-HMAC",
                      "AccessKeyId": md["accessKeyId"], "SecretAccessKey": identity["secretAccessKey"],
                      "Token": identity["sessionToken"], "Expiration": rfc3339(expires)}
            raise Reply(200, json.dumps(answer, indent=2), text)
        raise imds_error(404)

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
        self.log_extra["subjectTokenType"] = form.get("subject_token_type")
        self.log_extra["options"] = None
        if form.get("grant_type") != TOKEN_EXCHANGE:
            raise oauth_error(400, "unsupported_grant_type", "Invalid value for \"grant_type\". Expected "
                                                             "\"%s\"." % TOKEN_EXCHANGE)
        if form.get("requested_token_type") != ACCESS_TOKEN_TYPE:
            raise oauth_error(400, "invalid_request", "Invalid value for \"requested_token_type\": expected \"%s\"."
                              % ACCESS_TOKEN_TYPE)
        token_type = form.get("subject_token_type")
        if token_type not in SUBJECT_TOKEN_TYPES:
            raise oauth_error(400, "invalid_request", "Invalid value for \"subject_token_type\".")
        if not form.get("subject_token"):
            raise oauth_error(400, "invalid_request", "The subject token is missing.")
        self.log_extra["options"] = self.sts_options(form.get("options"))
        audience = form.get("audience", "")
        with st.lock:
            provider = st.providers.get(audience)
            provider = {"subjects": dict(provider["subjects"]), "awsAccountId": provider.get("awsAccountId")} \
                if provider else None
        if provider is None:
            raise oauth_error(400, "invalid_target", "The target service indicated by the \"audience\" parameters "
                                                     "is invalid. This might either be because the pool or provider "
                                                     "is disabled or deleted or because it doesn't exist.")
        if token_type == AWS_TOKEN_TYPE:
            arn, account = self.aws_caller(form["subject_token"], audience)
            if provider["awsAccountId"] and account != provider["awsAccountId"]:
                raise oauth_error(400, "invalid_grant", "The AWS account %s is not the account of this provider."
                                  % account)
            subject = provider["subjects"].get(arn, arn)
        elif token_type == MTLS_TOKEN_TYPE:
            common_name = self.mtls_caller(form["subject_token"])
            subject = provider["subjects"].get(common_name, common_name)
        else:
            subject = provider["subjects"].get(form["subject_token"])
        if subject is None:
            raise oauth_error(400, "invalid_grant", "The subject token is invalid or was not issued for this "
                                                    "provider.")
        match = (re.match(r"^//iam\.googleapis\.com/(projects/[^/]+/locations/[^/]+/workloadIdentityPools/[^/]+)/providers/",
                          audience)
                 or re.match(r"^//iam\.googleapis\.com/(locations/[^/]+/workforcePools/[^/]+)/providers/", audience))
        pool = match.group(1) if match else audience.lstrip("/").split("/", 1)[-1]
        principal = "principal://iam.googleapis.com/%s/subject/%s" % (pool, subject)
        self.principal = principal
        scopes = [s for s in form.get("scope", "").split(" ") if s]
        with st.lock:
            token, lifetime, _ = st.issue_token(principal, scopes)
        raise Reply(200, {"access_token": token, "issued_token_type": ACCESS_TOKEN_TYPE,
                          "token_type": "Bearer", "expires_in": lifetime})

    @staticmethod
    def sts_options(text):
        """The decoded "options": a JSON object, sent as is (Go, Java) or percent-encoded (google-auth)."""
        if text is None or text == "":
            return None
        for candidate in (text, urllib.parse.unquote(text)):
            try:
                value = json.loads(candidate)
            except ValueError:
                continue
            if isinstance(value, dict):
                return value
        raise oauth_error(400, "invalid_request", "Invalid value for \"options\": a JSON object is expected.")

    def aws_caller(self, subject_token, audience):
        """(ARN, account) of the AWS identity whose signed GetCallerIdentity request subject_token is; AWS's checks
        of it are aws_sigv4.verify's and the identity's."""
        invalid = lambda: oauth_error(400, "invalid_request", AWS_INVALID_FORMAT)
        try:
            # Percent-encoded (google-auth: %20 for a space) or query-escaped (Go, Java: '+'): both decode so.
            request = json.loads(urllib.parse.unquote_plus(subject_token))
        except ValueError:
            raise invalid() from None
        if not isinstance(request, dict) or not isinstance(request.get("url"), str) \
                or not isinstance(request.get("headers"), list) or request.get("method") != "POST":
            raise invalid()
        headers = []
        for item in request["headers"]:
            if not isinstance(item, dict) or not isinstance(item.get("key"), str) \
                    or not isinstance(item.get("value"), str):
                raise invalid()
            headers.append((item["key"], item["value"]))
        by_name = {}
        for name, value in headers:
            by_name.setdefault(name.lower(), []).append(value)
        if any(len(v) > 1 for v in by_name.values()):
            raise invalid()
        try:
            url = urllib.parse.urlsplit(request["url"])
            port = url.port
        except ValueError:
            raise invalid() from None
        host_match = AWS_STS_HOST.match(url.hostname or "")
        query = dict(aws_sigv4.query_pairs(url.query))
        if (url.scheme != "https" or not host_match or port not in (None, 443) or url.path not in ("", "/")
                or query.get("Action") != "GetCallerIdentity" or query.get("Version") != "2011-06-15"
                or url.fragment or url.username or url.password):
            raise invalid()
        region = host_match.group(1) or "us-east-1"
        if not AWS_REGION.match(region):
            raise invalid()
        for needed in ("authorization", "host", "x-amz-date", "x-goog-cloud-target-resource"):
            if needed not in by_name:
                raise invalid()
        if by_name["host"][0] != url.hostname:
            raise invalid()
        target = by_name["x-goog-cloud-target-resource"][0]
        if target not in (audience, "https:" + audience):
            raise oauth_error(400, "invalid_grant", "The x-goog-cloud-target-resource header of the AWS request "
                                                    "does not match the audience.")
        body = request.get("body", request.get("data", ""))
        if not isinstance(body, str):
            raise invalid()
        st = self.state

        def aws_refusal(error):
            return oauth_error(400, "invalid_grant", "Received invalid AWS response of type %s with error message: %s"
                               % (error.code, error.message))

        try:
            auth = aws_sigv4.parse_authorization(by_name["authorization"][0])
            with st.lock:
                identity = st.aws_identities.get(auth.access_key_id)
                identity = dict(identity) if identity else None
            if identity is None:
                raise aws_sigv4.SigV4Error("InvalidClientTokenId", "The security token included in the request is "
                                                                    "invalid.")
            self.principal = identity["arn"]
            sent_token = by_name.get("x-amz-security-token", [None])[0]
            if sent_token != identity["sessionToken"]:
                raise aws_sigv4.SigV4Error("InvalidClientTokenId", "The security token included in the request is "
                                                                    "invalid.")
            if identity["expired"]:
                raise aws_sigv4.SigV4Error("ExpiredToken", "The security token included in the request is expired")
            aws_sigv4.verify("POST", request["url"], headers, body, lambda _: identity["secretAccessKey"],
                             expected_service="sts", expected_region=region)
        except aws_sigv4.SigV4Error as error:
            raise aws_refusal(error) from None
        return identity["arn"], identity["account"]

    def mtls_caller(self, subject_token):
        """The common name of the client certificate, once the subject token (google-auth's JSON array of base64
        DER certificates, leaf first) names it and its chain leads to the trusted CA."""
        if self.client_cert is None:
            raise oauth_error(400, "invalid_request", "The subject token type %s needs a mutual TLS connection "
                                                      "(https://sts.mtls.googleapis.com)." % MTLS_TOKEN_TYPE)
        try:
            chain = json.loads(subject_token)
            if not isinstance(chain, list) or not chain or not all(isinstance(c, str) for c in chain):
                raise ValueError
            certs = [x509.load_der_x509_certificate(base64.b64decode(c, validate=True)) for c in chain]
        except ValueError:
            raise oauth_error(400, "invalid_request", "The subject token must be a JSON array of base64-encoded DER "
                                                      "certificates, the leaf first.") from None
        leaf = certs[0]
        self.principal = cn_of(leaf)
        if leaf.public_bytes(serialization.Encoding.DER) != self.client_cert:
            raise oauth_error(400, "invalid_grant", "The leaf certificate of the subject token is not the client "
                                                    "certificate of the mutual TLS connection.")
        if not self.state.x509.trusted_chain(certs):
            raise oauth_error(400, "invalid_grant", "The certificate chain of the subject token does not lead to a "
                                                    "trust anchor of the provider's trust store.")
        return cn_of(leaf)

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
        self.log_extra["aud"] = claims.get("aud")
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


class MTLSServer(ThreadingHTTPServer):
    """The same endpoints over TLS with a required client certificate. The handshake runs in the request's
    thread (a slow or failing client holds no other), and each one is counted as kind mtlsHandshake."""

    daemon_threads = True

    def __init__(self, address, handler, context, state):
        super().__init__(address, handler)
        self.context = context
        self.state = state

    def get_request(self):
        sock, address = self.socket.accept()
        return self.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), address

    def finish_request(self, request, client_address):
        request.settimeout(10)
        try:
            request.do_handshake()
        except (ssl.SSLError, OSError) as error:
            reason = getattr(error, "reason", None) or type(error).__name__
            self.state.record("mtlsHandshake", "TLS", "", "refused", None, None, {"error": str(reason)})
            return
        request.settimeout(None)
        der = request.getpeercert(binary_form=True)
        name = cn_of(x509.load_der_x509_certificate(der)) if der else None
        self.state.record("mtlsHandshake", "TLS", "", "ok", name, None, {"version": request.version()})
        super().finish_request(request, client_address)

    def handle_error(self, request, client_address):
        if sys.exc_info()[0] in (ssl.SSLError, ConnectionResetError, BrokenPipeError):
            return  # a client that went away mid-request
        super().handle_error(request, client_address)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--state-dir", required=True)
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--mtls-port", type=int, default=0, help="the mutual TLS port (0: any free port)")
    parser.add_argument("--max-seconds", type=float, default=1800.0,
                        help="stop by itself after this many seconds (0: never)")
    parser.add_argument("--exit-on-stdin-eof", action="store_true",
                        help="stop when stdin reaches end of file (the parent went away)")
    parser.add_argument("--port-file",
                        help="also write the port to this file (written whole, then renamed into place)")
    parser.add_argument("--mtls-port-file",
                        help="also write the mutual TLS port to this file (written whole, then renamed into place)")
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
    mtls_server = MTLSServer(("127.0.0.1", args.mtls_port), Handler, state.x509.server_context(), state)
    mtls_port = mtls_server.server_address[1]
    state.base_url_mtls = "https://127.0.0.1:%d" % mtls_port
    threading.Thread(target=lambda: mtls_server.serve_forever(poll_interval=0.2), daemon=True).start()

    stopping = threading.Event()

    def stop(*_):
        if not stopping.is_set():
            stopping.set()
            threading.Thread(target=mtls_server.shutdown, daemon=True).start()
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

    sys.stdout.write(json.dumps({"port": port, "mtlsPort": mtls_port}) + "\n")
    sys.stdout.flush()
    # The mTLS port file first: a reader that waits for the port file then finds both.
    for path, value in ((args.mtls_port_file, mtls_port), (args.port_file, port)):
        if path:
            with open(path + ".tmp", "w") as f:
                f.write("%d\n" % value)
            os.rename(path + ".tmp", path)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        mtls_server.server_close()


if __name__ == "__main__":
    main()
