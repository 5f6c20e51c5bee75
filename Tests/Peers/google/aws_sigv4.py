"""AWS Signature Version 4 (the header form, AWS4-HMAC-SHA256), standard library only.

The Google stand-in uses it to play AWS's part in Workload Identity Federation from AWS: Google's STS takes a
serialised, signed GetCallerIdentity request as the subject token and has AWS check its signature, so the stand-in
checks it here with the secret of the registered AWS identity. test_google_standin.py checks this module against
AWS's published Signature Version 4 test suite and against google-auth's own signer (google.auth.aws.RequestSigner).

    sign(method, url, headers, payload, access_key_id, secret, region, service, amz_date) -> Signed
    verify(method, url, headers, payload, secret_for, now, expected_service=..., expected_region=...) -> Authorization

The steps are AWS's (https://docs.aws.amazon.com/IAM/latest/UserGuide/create-signed-request.html):
  canonical request = METHOD \\n canonical URI \\n canonical query \\n canonical headers \\n signed headers \\n
                      hex(SHA-256(payload))
  string to sign    = "AWS4-HMAC-SHA256" \\n amz date \\n date/region/service/aws4_request \\n
                      hex(SHA-256(canonical request))
  signing key       = HMAC(HMAC(HMAC(HMAC("AWS4" + secret, date), region), service), "aws4_request")
  signature         = hex(HMAC(signing key, string to sign))
"""

import datetime
import hashlib
import hmac
import posixpath
import re
import urllib.parse
from typing import Callable, List, NamedTuple, Optional, Sequence, Tuple

ALGORITHM = "AWS4-HMAC-SHA256"
TERMINATOR = "aws4_request"
EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
MAX_SKEW_SECONDS = 15 * 60  # AWS refuses a signature dated more than 15 minutes away from its clock
_UNRESERVED = "-_.~"  # with ASCII letters and digits: the characters SigV4 leaves unencoded

Headers = Sequence[Tuple[str, str]]


class SigV4Error(Exception):
    """Why AWS would refuse the request: `code` is AWS's error code (SignatureDoesNotMatch, IncompleteSignature,
    InvalidClientTokenId, ...), `message` its text."""

    def __init__(self, code: str, message: str):
        super().__init__("%s: %s" % (code, message))
        self.code = code
        self.message = message


class Authorization(NamedTuple):
    access_key_id: str
    date: str            # YYYYMMDD of the credential scope
    region: str
    service: str
    signed_headers: List[str]
    signature: str

    @property
    def scope(self) -> str:
        return "%s/%s/%s/%s" % (self.date, self.region, self.service, TERMINATOR)


class Signed(NamedTuple):
    canonical_request: str
    string_to_sign: str
    signature: str
    authorization: str


def uri_encode(text: str, encode_slash: bool = True) -> str:
    """RFC 3986 percent-encoding of UTF-8 with upper-case hex; only A-Z a-z 0-9 - _ . ~ (and / unless
    encode_slash) stay as they are."""
    return urllib.parse.quote(text, safe=_UNRESERVED + ("" if encode_slash else "/"))


def canonical_uri(path: str) -> str:
    """The path, dot segments and repeated slashes removed (non-S3 services), each segment URI-encoded once."""
    decoded = urllib.parse.unquote(path or "/")
    normalized = posixpath.normpath(decoded) if decoded not in ("", "/") else "/"
    if normalized.startswith("//"):  # posixpath keeps a leading "//"
        normalized = "/" + normalized.lstrip("/")
    if decoded.endswith("/") and not normalized.endswith("/"):
        normalized += "/"
    if not normalized.startswith("/"):
        normalized = "/" + normalized
    return uri_encode(normalized, encode_slash=False)


def query_pairs(query: str) -> List[Tuple[str, str]]:
    """The decoded name/value pairs of a raw query string ('+' stays '+', as AWS reads it)."""
    pairs = []
    for part in query.split("&") if query else []:
        if not part:
            continue
        name, _, value = part.partition("=")
        pairs.append((urllib.parse.unquote(name), urllib.parse.unquote(value)))
    return pairs


def canonical_query(pairs: Sequence[Tuple[str, str]]) -> str:
    """Each name and value URI-encoded, sorted by encoded name then value, joined name=value with '&'."""
    encoded = sorted((uri_encode(n), uri_encode(v)) for n, v in pairs)
    return "&".join("%s=%s" % nv for nv in encoded)


def _trimall(value: str) -> str:
    return re.sub(r"\s+", " ", value.strip())


def canonical_headers(headers: Headers, signed_headers: Sequence[str]) -> str:
    """name:value\\n for each signed header (lower-case name, values trimmed, inner runs of spaces made one; a header
    given more than once has its values joined with ','), in signed-header order."""
    values = {}
    for name, value in headers:
        values.setdefault(name.lower(), []).append(_trimall(str(value)))
    lines = []
    for name in signed_headers:
        if name not in values:
            raise SigV4Error("SignatureDoesNotMatch", "The request signature we calculated does not match the "
                             "signature you provided. Signed header %r is not in the request." % name)
        lines.append("%s:%s\n" % (name, ",".join(values[name])))
    return "".join(lines)


def canonical_request(method: str, path: str, pairs: Sequence[Tuple[str, str]], headers: Headers,
                      signed_headers: Sequence[str], payload_hash: str) -> str:
    return "\n".join([method.upper(), canonical_uri(path), canonical_query(pairs),
                      canonical_headers(headers, signed_headers), ";".join(signed_headers), payload_hash])


def string_to_sign(amz_date: str, scope: str, canonical: str) -> str:
    return "\n".join([ALGORITHM, amz_date, scope, hashlib.sha256(canonical.encode("utf-8")).hexdigest()])


def signing_key(secret: str, date: str, region: str, service: str) -> bytes:
    key = ("AWS4" + secret).encode("utf-8")
    for part in (date, region, service, TERMINATOR):
        key = hmac.new(key, part.encode("utf-8"), hashlib.sha256).digest()
    return key


def signature(secret: str, date: str, region: str, service: str, to_sign: str) -> str:
    return hmac.new(signing_key(secret, date, region, service), to_sign.encode("utf-8"), hashlib.sha256).hexdigest()


def _payload_bytes(payload) -> bytes:
    if payload is None:
        return b""
    return payload.encode("utf-8") if isinstance(payload, str) else bytes(payload)


def sign(method: str, url: str, headers: Headers, payload, access_key_id: str, secret: str, region: str,
         service: str, amz_date: str) -> Signed:
    """Signs every header given (they must include host and x-amz-date, as the test suite's requests do)."""
    parts = urllib.parse.urlsplit(url)
    signed_headers = sorted({name.lower() for name, _ in headers})
    canonical = canonical_request(method, parts.path, query_pairs(parts.query), headers, signed_headers,
                                  hashlib.sha256(_payload_bytes(payload)).hexdigest())
    scope = "%s/%s/%s/%s" % (amz_date[:8], region, service, TERMINATOR)
    to_sign = string_to_sign(amz_date, scope, canonical)
    sig = signature(secret, amz_date[:8], region, service, to_sign)
    authorization = "%s Credential=%s/%s, SignedHeaders=%s, Signature=%s" % (
        ALGORITHM, access_key_id, scope, ";".join(signed_headers), sig)
    return Signed(canonical, to_sign, sig, authorization)


_AUTH_RE = re.compile(r"^AWS4-HMAC-SHA256\s+(?P<params>.+)$")


def parse_authorization(value: str) -> Authorization:
    """The parts of an `AWS4-HMAC-SHA256 Credential=..., SignedHeaders=..., Signature=...` header."""
    m = _AUTH_RE.match(value or "")
    if not m:
        raise SigV4Error("IncompleteSignature", "Authorization header requires the AWS4-HMAC-SHA256 algorithm.")
    params = {}
    for item in m.group("params").split(","):
        name, eq, val = item.strip().partition("=")
        if not eq or not name:
            raise SigV4Error("IncompleteSignature", "'%s' not a valid key=value pair (missing equal-sign) in "
                             "Authorization header." % item.strip())
        params[name] = val
    for needed in ("Credential", "SignedHeaders", "Signature"):
        if needed not in params:
            raise SigV4Error("IncompleteSignature", "Authorization header requires '%s' parameter." % needed)
    credential = params["Credential"].split("/")
    if len(credential) != 5 or credential[4] != TERMINATOR or not all(credential):
        raise SigV4Error("IncompleteSignature", "Credential must have exactly 5 slash-delimited elements, e.g. "
                         "keyid/date/region/service/aws4_request.")
    signed = params["SignedHeaders"].split(";")
    if signed != sorted(signed) or any(s != s.lower() or not s for s in signed):
        raise SigV4Error("SignatureDoesNotMatch", "SignedHeaders must be lower-case names in sorted order.")
    if not re.fullmatch(r"[0-9a-f]{64}", params["Signature"]):
        raise SigV4Error("IncompleteSignature", "Signature must be 64 lower-case hex digits.")
    return Authorization(credential[0], credential[1], credential[2], credential[3], signed, params["Signature"])


def parse_amz_date(amz_date: str) -> datetime.datetime:
    try:
        return datetime.datetime.strptime(amz_date, "%Y%m%dT%H%M%SZ").replace(tzinfo=datetime.timezone.utc)
    except (TypeError, ValueError):
        raise SigV4Error("IncompleteSignature", "Date must be in ISO-8601 'basic format' (YYYYMMDD'T'HHMMSS'Z'). "
                         "Got '%s'." % (amz_date,)) from None


def verify(method: str, url: str, headers: Headers, payload, secret_for: Callable[[Authorization], str],
           now: Optional[float] = None, expected_service: Optional[str] = None,
           expected_region: Optional[str] = None, max_skew: int = MAX_SKEW_SECONDS) -> Authorization:
    """Checks a signed request as AWS does; returns its Authorization, or raises SigV4Error.

    `secret_for(authorization)` returns the secret of the access key the request names (it raises SigV4Error
    InvalidClientTokenId for an unknown key). `now` defaults to the current time; the x-amz-date must be within
    `max_skew` seconds of it. host and x-amz-date must be signed."""
    names = {}
    for name, value in headers:
        names.setdefault(name.lower(), []).append(str(value))
    if "authorization" not in names:
        raise SigV4Error("MissingAuthenticationToken", "Request is missing Authentication Token")
    if len(names["authorization"]) != 1:
        raise SigV4Error("IncompleteSignature", "The request has more than one Authorization header.")
    auth = parse_authorization(names["authorization"][0])
    for needed in ("host", "x-amz-date"):
        if needed not in auth.signed_headers:
            raise SigV4Error("SignatureDoesNotMatch", "'%s' must be a signed header." % needed)
    amz_date = names.get("x-amz-date", [""])[0]
    when = parse_amz_date(amz_date)
    if auth.date != amz_date[:8]:
        raise SigV4Error("SignatureDoesNotMatch", "Date in Credential scope does not match YYYYMMDD from ISO-8601 "
                         "version of date from HTTP: '%s' != '%s', from '%s'." % (auth.date, amz_date[:8], amz_date))
    if expected_service is not None and auth.service != expected_service:
        raise SigV4Error("SignatureDoesNotMatch", "Credential should be scoped to correct service: '%s'. "
                         % expected_service)
    if expected_region is not None and auth.region != expected_region:
        raise SigV4Error("SignatureDoesNotMatch", "Credential should be scoped to a valid region, not '%s'. "
                         % auth.region)
    current = datetime.datetime.fromtimestamp(now if now is not None else datetime.datetime.now().timestamp(),
                                              datetime.timezone.utc)
    fmt = lambda d: d.strftime("%Y%m%dT%H%M%SZ")
    skew = datetime.timedelta(seconds=max_skew)
    if when < current - skew:
        raise SigV4Error("SignatureDoesNotMatch", "Signature expired: %s is now earlier than %s (%s - %d min.)"
                         % (amz_date, fmt(current - skew), fmt(current), max_skew // 60))
    if when > current + skew:
        raise SigV4Error("SignatureDoesNotMatch", "Signature not yet current: %s is still later than %s (%s + %d min.)"
                         % (amz_date, fmt(current + skew), fmt(current), max_skew // 60))
    secret = secret_for(auth)
    parts = urllib.parse.urlsplit(url)
    canonical = canonical_request(method, parts.path, query_pairs(parts.query), headers, auth.signed_headers,
                                  hashlib.sha256(_payload_bytes(payload)).hexdigest())
    expected = signature(secret, auth.date, auth.region, auth.service,
                         string_to_sign(amz_date, auth.scope, canonical))
    if not hmac.compare_digest(expected, auth.signature):
        raise SigV4Error("SignatureDoesNotMatch", "The request signature we calculated does not match the signature "
                         "you provided. Check your AWS Secret Access Key and signing method. Consult the service "
                         "documentation for details.")
    return auth
