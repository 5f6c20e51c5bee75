"""Proves google_standin.py behaves like Google, with Google's own Python library google-auth as the
independent party. Loopback only: the stand-in binds 127.0.0.1, and an autouse guard makes any attempt of
this process to resolve or connect to anything else fail the test.

Run: python3 -m pip install 'google-auth>=2.39' requests pytest && python3 -m pytest -q Tests/Peers/google/test_google_standin.py

Where google-auth hard-codes Google's hosts, it is pointed at the stand-in as follows (each said again where used):
  * metadata server: GCE_METADATA_HOST (token, email, project) and GCE_METADATA_IP (the ping of
    google.auth.default()) = 127.0.0.1:PORT, the env vars google-auth supports. google-auth reads
    GCE_METADATA_HOST once at import, so the test also sets the module value _metadata._GCE_METADATA_HOST.
  * service_account files: their own "token_uri" (the stand-in writes it).
  * authorized_user files: google-auth ignores any token_uri in the file and always uses
    https://oauth2.googleapis.com/token; the test uses the supported Credentials.with_token_uri().
  * external_account files: their own "token_url" and "service_account_impersonation_url".
  * IAM signBlob/signJwt/generateAccessToken of google.auth.iam and google.auth.impersonated_credentials: the
    URL is a module constant built for https://iamcredentials.<universe domain>; a universe domain cannot make it
    plain-HTTP loopback, so the test patches iam._IAM_SIGN_ENDPOINT, _IAM_SIGNJWT_ENDPOINT and _IAM_ENDPOINT.
  * AWS (google.auth.aws): the credential_source's own region_url, url and imdsv2_session_token_url (the stand-in's
    /latest/... where AWS has http://169.254.169.254/latest/...). regional_cred_verification_url stays AWS's
    https://sts.{region}.amazonaws.com URL: google-auth only signs it (never calls it), the stand-in checks it.
  * X.509 (google.auth.identity_pool with a "certificate" source): token_url and service_account_impersonation_url
    on the stand-in's mTLS port (Google's sts.mtls / iamcredentials.mtls); google-auth passes the workload
    certificate as requests' cert=(cert_path, key_path), and the transport's session trusts DIR/x509/ca.pem.
  * Executables (google.auth.pluggable): executable_source.py beside this file, run with
    GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES=1.
"""

import base64
import datetime
import hashlib
import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.parse

import pytest
import requests
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.exceptions import InvalidSignature

import google.auth
import google.auth.transport.requests
from google.auth import aws, compute_engine, exceptions, iam, identity_pool, impersonated_credentials, jwt, pluggable
from google.auth.compute_engine import _metadata
from google.oauth2 import credentials as user_credentials
from google.oauth2 import service_account

import aws_sigv4

# X.509 credential sources with trust_chain_path came in google-auth 2.39.0 (certificate sources a little earlier).
GOOGLE_AUTH_MIN = (2, 39)
if tuple(int(p) for p in google.auth.__version__.split(".")[:2]) < GOOGLE_AUTH_MIN:
    raise RuntimeError("these tests need google-auth >= %d.%d (found %s): python3 -m pip install -U 'google-auth>=2.39'"
                       % (GOOGLE_AUTH_MIN + (google.auth.__version__,)))

HERE = os.path.dirname(os.path.abspath(__file__))
STANDIN = os.path.join(HERE, "google_standin.py")
EXECUTABLE = os.path.join(HERE, "executable_source.py")
CLOUD = "https://www.googleapis.com/auth/cloud-platform"
FLEET_AUD = "https://fleetengine.googleapis.com/"
DEFAULT_SA = "standin-default@standin-project.iam.gserviceaccount.com"
HTTP_TIMEOUT = 10
AWS_DEFAULT_KEY = "ASIASTANDIN000000001"
AWS_DEFAULT_ARN = "arn:aws:sts::111122223333:assumed-role/standin-role/i-0123456789abcdef0"
AWS_METADATA_DEFAULTS = {"availabilityZone": "us-east-1b", "roleName": "standin-role",
                         "accessKeyId": AWS_DEFAULT_KEY, "imdsv2": "required"}
AWS_TOKEN_TYPE = "urn:ietf:params:aws:token-type:aws4_request"
MTLS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:mtls"
AWS_VERIFICATION_URL = "https://sts.{region}.amazonaws.com?Action=GetCallerIdentity&Version=2011-06-15"


# --- the stand-in process --------------------------------------------------------------------------------

class StandIn:
    def __init__(self, proc, port, mtls_port, state_dir):
        self.proc, self.port, self.mtls_port, self.state_dir = proc, port, mtls_port, state_dir
        self.base = "http://127.0.0.1:%d" % port
        self.host = "127.0.0.1:%d" % port
        self.mtls_base = "https://127.0.0.1:%d" % mtls_port
        self.ca_file = os.path.join(state_dir, "x509", "ca.pem")

    def control(self, **body):
        r = requests.post(self.base + "/_control", json=body, timeout=HTTP_TIMEOUT)
        assert r.status_code == 200, r.text
        return r.json()

    def calls(self):
        return requests.get(self.base + "/_control/calls", timeout=HTTP_TIMEOUT).json()["calls"]

    def log(self, kind=None):
        log = requests.get(self.base + "/_control/calls", timeout=HTTP_TIMEOUT).json()["log"]
        return [e for e in log if kind is None or e["kind"] == kind]

    def jwks(self, email):
        r = requests.get(self.base + "/service_accounts/v1/jwk/" + email, timeout=HTTP_TIMEOUT)
        assert r.status_code == 200, r.text
        return r.json()

    def x509(self, email):
        r = requests.get(self.base + "/service_accounts/v1/metadata/x509/" + email, timeout=HTTP_TIMEOUT)
        assert r.status_code == 200, r.text
        return r.json()

    def iam_url(self, email, method):
        return "%s/v1/projects/-/serviceAccounts/%s:%s" % (self.base, email, method)


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    state_dir = tmp_path_factory.mktemp("standin-state")
    stderr = open(state_dir / "stderr.log", "wb")
    proc = subprocess.Popen(
        [sys.executable, STANDIN, "--state-dir", str(state_dir), "--port", "0", "--max-seconds", "300",
         "--exit-on-stdin-eof"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr)
    line = {}
    reader = threading.Thread(target=lambda: line.update(text=proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(15)
    try:
        assert line.get("text"), "the stand-in printed no first line within 15 s"
        first = json.loads(line["text"])
        assert list(first) == ["port", "mtlsPort"]
        yield StandIn(proc, first["port"], first["mtlsPort"], str(state_dir))
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        stderr.close()
        errors = (state_dir / "stderr.log").read_text()
        assert "Traceback" not in errors, errors


@pytest.fixture(autouse=True)
def loopback_only(monkeypatch):
    """Any name resolution or connection off loopback from this process fails the test."""
    real_getaddrinfo = socket.getaddrinfo
    real_connect = socket.socket.connect

    def is_loopback(host):
        host = host.decode() if isinstance(host, bytes) else str(host)
        return host in ("localhost", "::1") or host.startswith("127.")

    def getaddrinfo(host, *args, **kwargs):
        if not is_loopback(host):
            raise OSError("test guard: refusing to resolve non-loopback host %r" % (host,))
        return real_getaddrinfo(host, *args, **kwargs)

    def connect(self, address):
        if isinstance(address, tuple) and not is_loopback(address[0]):
            raise OSError("test guard: refusing to connect to %r" % (address,))
        return real_connect(self, address)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket.socket, "connect", connect)


@pytest.fixture
def env(standin, monkeypatch, tmp_path):
    """ADC environment with only the stand-in's metadata server present; faults and lifetimes reset after."""
    empty_config = tmp_path / "gcloud-config"
    empty_config.mkdir()
    for name in ("GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_CLOUD_PROJECT", "GCLOUD_PROJECT", "NO_GCE_CHECK",
                 "GOOGLE_CLOUD_QUOTA_PROJECT", "GOOGLE_API_USE_CLIENT_CERTIFICATE", "GOOGLE_API_USE_MTLS_ENDPOINT",
                 "GCE_METADATA_MTLS_MODE", "GOOGLE_AUTH_TRUST_BOUNDARY_ENABLED",
                 "GOOGLE_SDK_EXPERIMENTAL_PYTHON_REGIONAL_ACCESS_BOUNDARY_LOOKUP_ENABLED",
                 "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION",
                 "AWS_DEFAULT_REGION", "GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES", "GOOGLE_API_CERTIFICATE_CONFIG",
                 "CLOUDSDK_CONTEXT_AWARE_CERTIFICATE_CONFIG_FILE_PATH", "GOOGLE_API_ENABLE_RUNTIME_BOUND_TOKEN",
                 "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("CLOUDSDK_CONFIG", str(empty_config))
    monkeypatch.setenv("GCE_METADATA_HOST", standin.host)  # google-auth's env var for the metadata host
    monkeypatch.setenv("GCE_METADATA_IP", standin.host)    # ... and for the ping google.auth.default() makes
    # google-auth reads GCE_METADATA_HOST once, when _metadata is imported: set the module's copy as well.
    monkeypatch.setattr(_metadata, "_GCE_METADATA_HOST", standin.host)
    # google.auth.iam builds https://iamcredentials.googleapis.com/... URLs as module constants (the universe
    # domain can change the host but not the scheme): point them at the stand-in.
    base = standin.base + "/v1/projects/-/serviceAccounts/{}"
    monkeypatch.setattr(iam, "_IAM_SIGN_ENDPOINT", base + ":signBlob")
    monkeypatch.setattr(iam, "_IAM_SIGNJWT_ENDPOINT", base + ":signJwt")
    monkeypatch.setattr(iam, "_IAM_ENDPOINT", base + ":generateAccessToken")
    yield standin
    standin.control(reset=["faults", "calls"], tokenLifetimeSec=None, awsMetadata=AWS_METADATA_DEFAULTS,
                    awsIdentities=[{"accessKeyId": AWS_DEFAULT_KEY, "expired": False}])


def transport():
    return google.auth.transport.requests.Request()


def mtls_transport(standin):
    """google-auth's requests transport whose session trusts the stand-in's CA (for its mTLS port)."""
    session = requests.Session()
    session.verify = standin.ca_file
    return google.auth.transport.requests.Request(session)


_counter = iter(range(1, 10**6))


def new_account(standin, name, export=False):
    email = "%s-%d@fleet-proj.iam.gserviceaccount.com" % (name, next(_counter))
    state = standin.control(accounts=[{"email": email, "exportKeyFile": export}])
    return email, state["accounts"][email]


def metadata_credentials():
    creds = compute_engine.Credentials()
    creds.refresh(transport())
    return creds


def public_key_from_jwk(jwk):
    n = int.from_bytes(base64.urlsafe_b64decode(jwk["n"] + "=" * (-len(jwk["n"]) % 4)), "big")
    e = int.from_bytes(base64.urlsafe_b64decode(jwk["e"] + "=" * (-len(jwk["e"]) % 4)), "big")
    return rsa.RSAPublicNumbers(e, n).public_key()


def verify_with_jwks(jwks, signature, data, kid=None):
    """The kid of the JWKS key that verifies the signature (only the key named kid, if given), or None."""
    for jwk in jwks["keys"]:
        if kid is not None and jwk["kid"] != kid:
            continue
        assert jwk["kty"] == "RSA" and jwk["alg"] == "RS256" and jwk["use"] == "sig"
        try:
            public_key_from_jwk(jwk).verify(signature, data, padding.PKCS1v15(), hashes.SHA256())
            return jwk["kid"]
        except InvalidSignature:
            continue
    return None


def jwt_parts(token):
    h, p, s = token.split(".")
    dec = lambda x: base64.urlsafe_b64decode(x + "=" * (-len(x) % 4))
    return json.loads(dec(h)), json.loads(dec(p)), dec(s), (h + "." + p).encode()


def sign_jwt(creds, target, claims):
    """signJwt as google-auth's impersonated_credentials calls it (its own request code and headers)."""
    headers = {"Content-Type": "application/json"}
    creds.apply(headers)
    return impersonated_credentials._sign_jwt_request(transport(), target, headers, claims)


def fleet_claims(email, lifetime=3600):
    now = int(time.time())
    return {"iss": email, "sub": email, "aud": FLEET_AUD, "iat": now, "exp": now + lifetime,
            "authorization": {"tripid": "trip-42"}}


# --- metadata server ---------------------------------------------------------------------------------------

def test_metadata_requires_flavor_header_and_answers_with_it(env):
    url = env.base + "/computeMetadata/v1/project/project-id"
    bare = requests.get(url, timeout=HTTP_TIMEOUT)
    assert bare.status_code == 403
    assert bare.headers["Metadata-Flavor"] == "Google"
    ok = requests.get(url, headers={"Metadata-Flavor": "Google"}, timeout=HTTP_TIMEOUT)
    assert ok.status_code == 200 and ok.text == "standin-project"
    assert ok.headers["Metadata-Flavor"] == "Google"
    proxied = requests.get(url, headers={"Metadata-Flavor": "Google", "X-Forwarded-For": "10.0.0.1"},
                           timeout=HTTP_TIMEOUT)
    assert proxied.status_code == 403


def test_compute_engine_credentials_refresh_from_metadata(env):
    creds = compute_engine.Credentials()
    creds.refresh(transport())
    assert creds.token.startswith("ya29.")
    assert creds.valid
    assert creds.expiry > datetime.datetime.utcnow() + datetime.timedelta(minutes=50)
    assert creds.service_account_email == DEFAULT_SA  # google-auth read it from ?recursive=true
    assert _metadata.get_project_id(transport()) == "standin-project"
    assert _metadata.get_service_account_info(transport())["aliases"] == ["default"]
    calls = env.calls()["metadata"]
    assert calls["byStatus"] == {"200": calls["count"]}


def test_default_finds_the_metadata_server(env):
    creds, project = google.auth.default(scopes=[CLOUD])
    assert isinstance(creds, compute_engine.Credentials)
    assert project == "standin-project"
    creds.refresh(transport())
    assert creds.token.startswith("ya29.") and creds.service_account_email == DEFAULT_SA


def test_default_ignores_a_server_that_does_not_answer_metadata_flavor(env, monkeypatch):
    # google-auth takes a server for the metadata server only if its answer carries Metadata-Flavor: Google.
    class Plain(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args):
            pass

    plain = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Plain)
    threading.Thread(target=plain.serve_forever, daemon=True).start()
    try:
        monkeypatch.setenv("GCE_METADATA_IP", "127.0.0.1:%d" % plain.server_address[1])
        monkeypatch.setattr(_metadata, "detect_gce_residency_linux", lambda: False)
        with pytest.raises(exceptions.DefaultCredentialsError):
            google.auth.default()
    finally:
        plain.shutdown()
        plain.server_close()


# --- OAuth token endpoint -----------------------------------------------------------------------------------

def test_service_account_file_refreshes_through_jwt_bearer_grant(env, monkeypatch):
    email, info = new_account(env, "keyfile", export=True)
    with open(info["keyFile"]) as f:
        key_file = json.load(f)
    assert key_file["type"] == "service_account" and key_file["token_uri"] == env.base + "/token"
    assert key_file["private_key_id"] in [k["kid"] for k in env.jwks(email)["keys"]]

    creds = service_account.Credentials.from_service_account_file(info["keyFile"], scopes=[CLOUD])
    creds.refresh(transport())
    assert creds.token.startswith("ya29.") and creds.valid
    assert env.calls()["token"]["byPrincipal"] == {email: 1}

    # As ADC through GOOGLE_APPLICATION_CREDENTIALS, project from the file.
    monkeypatch.setenv("GOOGLE_APPLICATION_CREDENTIALS", info["keyFile"])
    adc, project = google.auth.default(scopes=[CLOUD])
    assert isinstance(adc, service_account.Credentials) and project == "fleet-proj"
    adc.refresh(transport())
    assert adc.token.startswith("ya29.")


def test_a_disabled_key_leaves_the_published_lists_and_its_grants_fail(env):
    email, info = new_account(env, "disabled", export=True)
    with open(info["keyFile"]) as f:
        kid = json.load(f)["private_key_id"]
    creds = service_account.Credentials.from_service_account_file(info["keyFile"], scopes=[CLOUD])
    creds.refresh(transport())
    env.control(disableKeys=[{"email": email, "kid": kid}])
    assert kid not in [k["kid"] for k in env.jwks(email)["keys"]] and kid not in env.x509(email)
    with pytest.raises(google.auth.exceptions.RefreshError):
        service_account.Credentials.from_service_account_file(info["keyFile"], scopes=[CLOUD]).refresh(transport())
    env.control(enableKeys=[{"email": email, "kid": kid}])
    assert kid in [k["kid"] for k in env.jwks(email)["keys"]]


def test_jwt_bearer_grant_rejects_a_foreign_key_and_missing_scope(env, tmp_path):
    email, info = new_account(env, "forged", export=True)
    with open(info["keyFile"]) as f:
        key_file = json.load(f)
    other, other_info = new_account(env, "other", export=True)
    with open(other_info["keyFile"]) as f:
        key_file["private_key"] = json.load(f)["private_key"]  # right email and kid, someone else's key
    forged = tmp_path / "forged.json"
    forged.write_text(json.dumps(key_file))
    creds = service_account.Credentials.from_service_account_file(str(forged), scopes=[CLOUD])
    with pytest.raises(exceptions.RefreshError, match="invalid_grant: Invalid JWT Signature"):
        creds.refresh(transport())

    unscoped = service_account.Credentials.from_service_account_file(info["keyFile"])
    with pytest.raises(exceptions.RefreshError, match="invalid_scope"):
        unscoped.refresh(transport())


def test_authorized_user_file_refreshes_through_refresh_token(env):
    state = env.control(authorizedUsers=[{"clientId": "cid-1.apps.googleusercontent.com", "clientSecret": "s3cr3t",
                                          "refreshToken": "1//refresh-1", "email": "dev@example.com",
                                          "exportFile": True}])
    path = state["authorizedUsers"]["cid-1.apps.googleusercontent.com"]["file"]
    with open(path) as f:
        assert json.load(f)["type"] == "authorized_user"
    # google-auth always sets https://oauth2.googleapis.com/token for authorized_user files; with_token_uri
    # is its supported way to use another token endpoint.
    creds = user_credentials.Credentials.from_authorized_user_file(path).with_token_uri(env.base + "/token")
    creds.refresh(transport())
    assert creds.token.startswith("ya29.") and creds.valid
    assert env.calls()["token"]["byPrincipal"] == {"dev@example.com": 1}

    bad = user_credentials.Credentials(None, refresh_token="1//nope", token_uri=env.base + "/token",
                                       client_id="cid-1.apps.googleusercontent.com", client_secret="s3cr3t")
    with pytest.raises(exceptions.RefreshError, match="invalid_grant"):
        bad.refresh(transport())
    wrong_secret = user_credentials.Credentials(None, refresh_token="1//refresh-1", token_uri=env.base + "/token",
                                                client_id="cid-1.apps.googleusercontent.com", client_secret="x")
    with pytest.raises(exceptions.RefreshError, match="invalid_client"):
        wrong_secret.refresh(transport())


# --- STS + impersonation (Workload Identity Federation) -------------------------------------------------------

def write_external_account(env, tmp_path, audience, subject_token, target):
    token_file = tmp_path / "subject-token.txt"
    token_file.write_text(subject_token)
    config = {
        "type": "external_account",
        "audience": audience,
        "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
        "token_url": env.base + "/v1/token",
        "service_account_impersonation_url": env.iam_url(target, "generateAccessToken"),
        "credential_source": {"file": str(token_file), "format": {"type": "text"}},
    }
    path = tmp_path / "external_account.json"
    path.write_text(json.dumps(config))
    return str(path)


def test_identity_pool_credentials_exchange_and_impersonate(env, tmp_path):
    target, _ = new_account(env, "wif-target")
    audience = ("//iam.googleapis.com/projects/123456/locations/global/workloadIdentityPools/ci-pool/"
                "providers/ci-provider")
    principal = ("principal://iam.googleapis.com/projects/123456/locations/global/workloadIdentityPools/ci-pool/"
                 "subject/repo:acme/tokengate")
    env.control(workloadProviders=[{"audience": audience, "subjects": {"oidc-token-from-ci": "repo:acme/tokengate"}}],
                grants={principal: [target]})
    path = write_external_account(env, tmp_path, audience, "oidc-token-from-ci", target)

    # The type-specific loader: google.auth.load_credentials_from_file/default() with scopes would also ask
    # cloudresourcemanager.googleapis.com for the project ID of an external_account (the guard refuses that).
    creds = identity_pool.Credentials.from_file(path, scopes=[CLOUD])
    creds.refresh(transport())
    assert creds.token.startswith("ya29.") and creds.valid
    assert creds.expiry > datetime.datetime.utcnow() + datetime.timedelta(minutes=55)  # expireTime parsed
    calls = env.calls()
    assert calls["sts"]["byPrincipal"] == {principal: 1}
    assert calls["generateAccessToken"]["byPrincipal"] == {principal: 1}
    assert calls["generateAccessToken"]["byTarget"] == {target: 1}

    # The impersonated token acts as the target: it may sign as itself once granted on itself.
    env.control(grants={target: [target]})
    signed = sign_jwt(creds, target, fleet_claims(target))
    header, _, sig, data = jwt_parts(signed)
    assert verify_with_jwks(env.jwks(target), sig, data, header["kid"]) == header["kid"]


def test_identity_pool_without_grant_gets_permission_error(env, tmp_path):
    target, _ = new_account(env, "wif-nogrant")
    audience = "//iam.googleapis.com/projects/777/locations/global/workloadIdentityPools/p2/providers/prov"
    env.control(workloadProviders=[{"audience": audience, "subjects": {"tok-2": "someone"}}])
    path = write_external_account(env, tmp_path, audience, "tok-2", target)
    creds = identity_pool.Credentials.from_file(path, scopes=[CLOUD])
    with pytest.raises(exceptions.RefreshError, match="iam.serviceAccounts.getAccessToken"):
        creds.refresh(transport())

    unknown = write_external_account(env, tmp_path, audience, "not-a-known-token", target)
    creds = identity_pool.Credentials.from_file(unknown, scopes=[CLOUD])
    with pytest.raises(exceptions.OAuthError, match="invalid_grant"):
        creds.refresh(transport())


def test_impersonated_service_account_file(env, tmp_path):
    source, source_info = new_account(env, "imp-source", export=True)
    target, _ = new_account(env, "imp-target")
    env.control(grants={source: [target]})
    with open(source_info["keyFile"]) as f:
        source_file = json.load(f)
    info = {
        "type": "impersonated_service_account",
        # google-auth takes only the target email from this URL and calls iam._IAM_ENDPOINT (patched above)
        "service_account_impersonation_url": env.iam_url(target, "generateAccessToken"),
        "source_credentials": source_file,
        "delegates": [],
    }
    creds = impersonated_credentials.Credentials.from_impersonated_service_account_info(info, scopes=[CLOUD])
    assert isinstance(creds, impersonated_credentials.Credentials)
    creds.refresh(transport())
    assert creds.token.startswith("ya29.")
    # The source token was requested with the iam scope (google-auth rescopes it), and it was enough.
    assert env.calls()["generateAccessToken"]["byPrincipal"] == {source: 1}


# --- IAM signing, verified with the published keys -------------------------------------------------------------

def test_iam_signer_signblob_verifies_with_published_jwks(env):
    target, info = new_account(env, "signer")
    env.control(grants={DEFAULT_SA: [target]})
    creds = metadata_credentials()
    signer = iam.Signer(transport(), creds, target)
    message = b"fleet engine token header.payload"
    signature = signer.sign(message)
    assert verify_with_jwks(env.jwks(target), signature, message) == info["kid"]
    assert env.calls()["signBlob"]["byPrincipal"] == {DEFAULT_SA: 1}


def test_signjwt_verifies_with_jwks_and_x509(env):
    target, info = new_account(env, "jwt-signer")
    env.control(grants={DEFAULT_SA: [target]})
    creds = metadata_credentials()
    claims = fleet_claims(target)
    signed = sign_jwt(creds, target, claims)
    header, payload, sig, data = jwt_parts(signed)
    assert header == {"alg": "RS256", "kid": info["kid"], "typ": "JWT"}
    assert payload == claims
    assert verify_with_jwks(env.jwks(target), sig, data, info["kid"]) == info["kid"]
    # google-auth's own verifier with the account's published x509 certificates (keyed by kid).
    decoded = jwt.decode(signed, certs=env.x509(target), audience=FLEET_AUD)
    assert decoded["authorization"] == {"tripid": "trip-42"}

    # No exp in the payload: Google adds one an hour ahead.
    _, payload, _, _ = jwt_parts(sign_jwt(creds, target, {"iss": target, "aud": FLEET_AUD}))
    assert abs(payload["exp"] - (time.time() + 3600)) < 60


def test_impersonated_credentials_sign_bytes_and_refresh(env):
    source, source_info = new_account(env, "sb-source", export=True)
    target, info = new_account(env, "sb-target")
    env.control(grants={source: [target]})
    source_creds = service_account.Credentials.from_service_account_file(source_info["keyFile"])
    creds = impersonated_credentials.Credentials(
        source_creds, target, [CLOUD], lifetime=600,
        iam_endpoint_override=env.iam_url(target, "generateAccessToken"))
    creds.refresh(transport())
    remaining = (creds.expiry - datetime.datetime.utcnow()).total_seconds()
    assert 590 < remaining <= 600  # lifetime honoured, expireTime parsed by google-auth
    signature = creds.sign_bytes(b"blob")
    assert verify_with_jwks(env.jwks(target), signature, b"blob") == info["kid"]


def test_iam_without_grant_is_googles_permission_denied(env):
    target, _ = new_account(env, "nogrant")
    creds = metadata_credentials()
    with pytest.raises(exceptions.TransportError, match=r"Permission .{0,2}iam\.serviceAccounts\.signBlob.{0,2} denied on resource"):
        iam.Signer(transport(), creds, target).sign(b"x")
    with pytest.raises(exceptions.RefreshError) as err:
        sign_jwt(creds, target, fleet_claims(target))
    body = json.loads(err.value.args[1])
    assert body["error"]["code"] == 403 and body["error"]["status"] == "PERMISSION_DENIED"
    assert body["error"]["message"] == "Permission 'iam.serviceAccounts.signJwt' denied on resource (or it may not exist)."
    assert body["error"]["details"][0]["reason"] == "IAM_PERMISSION_DENIED"
    # An account that does not exist answers the same 403, as Google does with the "-" project wildcard.
    with pytest.raises(exceptions.RefreshError, match="denied on resource"):
        sign_jwt(creds, "ghost@fleet-proj.iam.gserviceaccount.com", fleet_claims("ghost"))


def test_iam_authentication_errors(env):
    target, _ = new_account(env, "authn")
    env.control(grants={DEFAULT_SA: [target]})
    url = env.iam_url(target, "signJwt")
    body = {"payload": json.dumps(fleet_claims(target))}
    missing = requests.post(url, json=body, timeout=HTTP_TIMEOUT)
    assert missing.status_code == 401
    assert missing.json()["error"]["details"][0]["reason"] == "CREDENTIALS_MISSING"
    unknown = requests.post(url, json=body, headers={"Authorization": "Bearer ya29.made-up"}, timeout=HTTP_TIMEOUT)
    assert unknown.status_code == 401 and unknown.json()["error"]["status"] == "UNAUTHENTICATED"

    env.control(tokenLifetimeSec=0)  # tokens issued from now on are already expired
    token = requests.get(env.base + "/computeMetadata/v1/instance/service-accounts/default/token",
                         headers={"Metadata-Flavor": "Google"}, timeout=HTTP_TIMEOUT).json()
    assert token["expires_in"] == 0
    expired = requests.post(url, json=body, headers={"Authorization": "Bearer " + token["access_token"]},
                            timeout=HTTP_TIMEOUT)
    assert expired.status_code == 401
    assert expired.json()["error"]["details"][0]["reason"] == "ACCESS_TOKEN_EXPIRED"
    env.control(tokenLifetimeSec=None)

    # A token without cloud-platform or iam scope is refused like Google does.
    narrow = requests.get(env.base + "/computeMetadata/v1/instance/service-accounts/default/token",
                          params={"scopes": "https://www.googleapis.com/auth/userinfo.email"},
                          headers={"Metadata-Flavor": "Google"}, timeout=HTTP_TIMEOUT).json()
    scoped = requests.post(url, json=body, headers={"Authorization": "Bearer " + narrow["access_token"]},
                           timeout=HTTP_TIMEOUT)
    assert scoped.status_code == 403
    assert scoped.json()["error"]["details"][0]["reason"] == "ACCESS_TOKEN_SCOPE_INSUFFICIENT"


def test_key_rotation_keeps_or_drops_old_key(env):
    target, info = new_account(env, "rotating")
    env.control(grants={DEFAULT_SA: [target]})
    creds = metadata_credentials()
    old = sign_jwt(creds, target, fleet_claims(target))
    state = env.control(rotate=[{"email": target, "keepOld": True}])
    new_kid = state["accounts"][target]["kid"]
    assert new_kid != info["kid"]
    new = sign_jwt(creds, target, fleet_claims(target))
    assert jwt_parts(new)[0]["kid"] == new_kid
    certs = env.x509(target)
    assert set(certs) == {info["kid"], new_kid}
    jwt.decode(old, certs=certs, audience=FLEET_AUD)
    jwt.decode(new, certs=certs, audience=FLEET_AUD)

    env.control(rotate=[{"email": target, "keepOld": False}])
    certs = env.x509(target)
    assert len(certs) == 1 and new_kid not in certs
    with pytest.raises(ValueError):
        jwt.decode(old, certs=certs, audience=FLEET_AUD)


# --- faults ----------------------------------------------------------------------------------------------------

def test_fault_403_is_googles_permission_error(env):
    target, _ = new_account(env, "fault403")
    env.control(grants={DEFAULT_SA: [target]}, faults={"signBlob": {"status": 403, "count": 1}})
    creds = metadata_credentials()
    with pytest.raises(exceptions.TransportError, match="PERMISSION_DENIED"):
        iam.Signer(transport(), creds, target).sign(b"x")
    assert iam.Signer(transport(), creds, target).sign(b"x")  # the fault was used up


def test_fault_503_then_success(env):
    target, info = new_account(env, "fault503")
    env.control(grants={DEFAULT_SA: [target]},
                faults={"signBlob": {"status": 503, "count": 1}, "metadata": {"status": 503, "count": 1}})
    creds = compute_engine.Credentials()
    creds.refresh(transport())  # google-auth retries the metadata server
    signature = iam.Signer(transport(), creds, target).sign(b"retry me")  # ... and IAM's 503
    assert verify_with_jwks(env.jwks(target), signature, b"retry me") == info["kid"]
    calls = env.calls()
    assert calls["signBlob"]["byStatus"] == {"503": 1, "200": 1}
    assert calls["metadata"]["byStatus"]["503"] == 1

    env.control(faults={"token": {"status": 503, "count": 1}})
    sa, sa_info = new_account(env, "fault503-token", export=True)
    sa_creds = service_account.Credentials.from_service_account_file(sa_info["keyFile"], scopes=[CLOUD])
    sa_creds.refresh(transport())  # google-auth retries the token endpoint too
    assert env.calls()["token"]["byStatus"] == {"503": 1, "200": 1}


def test_fault_429_carries_retry_after_and_delay(env):
    target, _ = new_account(env, "fault429")
    env.control(grants={DEFAULT_SA: [target]}, faults={"signJwt": {"status": 429, "count": 1, "retryAfter": 7}})
    creds = metadata_credentials()
    headers = {}
    creds.apply(headers)
    body = {"payload": json.dumps(fleet_claims(target))}
    r = requests.post(env.iam_url(target, "signJwt"), json=body, headers=headers, timeout=HTTP_TIMEOUT)
    assert r.status_code == 429 and r.headers["Retry-After"] == "7"
    assert r.json()["error"]["status"] == "RESOURCE_EXHAUSTED"

    env.control(faults={"signJwt": {"delayMs": 300, "count": 1}})
    started = time.monotonic()
    r = requests.post(env.iam_url(target, "signJwt"), json=body, headers=headers, timeout=HTTP_TIMEOUT)
    assert r.status_code == 200 and time.monotonic() - started >= 0.3


def test_fault_modes_sign_with_the_wrong_key(env):
    target, info = new_account(env, "modes")
    other, other_info = new_account(env, "modes-other")
    env.control(grants={DEFAULT_SA: [target]})
    creds = metadata_credentials()
    jwks = env.jwks(target)

    env.control(faults={"signJwt": {"mode": "unpublishedKey", "count": 1}})
    header, _, sig, data = jwt_parts(sign_jwt(creds, target, fleet_claims(target)))
    assert header["kid"] not in [k["kid"] for k in jwks["keys"]]
    assert verify_with_jwks(jwks, sig, data) is None

    env.control(faults={"signJwt": {"mode": "otherAccount", "account": other, "count": 1}})
    header, _, sig, data = jwt_parts(sign_jwt(creds, target, fleet_claims(target)))
    assert header["kid"] == other_info["kid"]
    assert verify_with_jwks(jwks, sig, data) is None
    assert verify_with_jwks(env.jwks(other), sig, data) == other_info["kid"]

    env.control(faults={"signJwt": {"mode": "noKid", "count": 1}})
    token = sign_jwt(creds, target, fleet_claims(target))
    header, _, sig, data = jwt_parts(token)
    assert header == {"alg": "RS256", "typ": "JWT"}
    assert verify_with_jwks(jwks, sig, data) == info["kid"]
    jwt.decode(token, certs=env.x509(target), audience=FLEET_AUD)  # google-auth tries every cert without kid

    header, _, _, _ = jwt_parts(sign_jwt(creds, target, fleet_claims(target)))  # faults used up
    assert header["kid"] == info["kid"]


def test_call_counts_by_principal(env):
    target, _ = new_account(env, "counted")
    env.control(grants={DEFAULT_SA: [target]}, reset=["calls"])
    creds = metadata_credentials()
    for _ in range(5):
        sign_jwt(creds, target, fleet_claims(target))
    calls = env.calls()
    assert calls["signJwt"]["count"] == 5
    assert calls["signJwt"]["byPrincipal"] == {DEFAULT_SA: 5}
    assert calls["signJwt"]["byTarget"] == {target: 5}
    log = requests.get(env.base + "/_control/calls", timeout=HTTP_TIMEOUT).json()["log"]
    assert [e["kind"] for e in log].count("signJwt") == 5


def test_control_rejects_unknown_keys(env):
    r = requests.post(env.base + "/_control", json={"grant": {}}, timeout=HTTP_TIMEOUT)
    assert r.status_code == 400 and "unknown control keys" in r.json()["error"]
    r = requests.post(env.base + "/_control", json={"faults": {"signJwt": {"mode": "bogus"}}}, timeout=HTTP_TIMEOUT)
    assert r.status_code == 400


# --- AWS Signature Version 4 (aws_sigv4.py, the stand-in's AWS part) ---------------------------------------------
#
# AWS's published Signature Version 4 test suite (formerly docs.aws.amazon.com/general/latest/gr/
# signature-v4-test-suite.html; every request signed by AKIDEXAMPLE with the secret below at 20150830T123600Z for
# region us-east-1, service "service"). The expected Authorization values are copied from the suite as AWS ships
# it in its JavaScript SDK, aws/aws-sdk-js-v3 packages/signature-v4/src/suite.fixture.ts; the canonical request
# and string to sign of get-vanilla and post-x-www-form-urlencoded are the suite's .creq and .sts files.

SUITE_KEY = "AKIDEXAMPLE"
SUITE_SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
SUITE_DATE = "20150830T123600Z"
SUITE_HEADERS = [("host", "example.amazonaws.com"), ("x-amz-date", SUITE_DATE)]
SUITE_FORM = [("content-type", "application/x-www-form-urlencoded")]
SUITE = [
    # name, method, URL, extra headers, payload, SignedHeaders, Signature
    ("get-vanilla", "GET", "https://example.amazonaws.com/", [], b"", "host;x-amz-date",
     "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"),
    ("get-vanilla-query-order-key-case", "GET", "https://example.amazonaws.com/?Param2=value2&Param1=value1", [], b"",
     "host;x-amz-date", "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500"),
    ("get-vanilla-query-unreserved", "GET", "https://example.amazonaws.com/?-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"
     "abcdefghijklmnopqrstuvwxyz=-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", [], b"",
     "host;x-amz-date", "9c3e54bfcdf0b19771a7f523ee5669cdf59bc7cc0884027167c21bb143a40197"),
    ("get-vanilla-utf8-query", "GET", "https://example.amazonaws.com/?%E1%88%B4=bar", [], b"", "host;x-amz-date",
     "2cdec8eed098649ff3a119c94853b13c643bcf08f8b0a1d91e12c9027818dd04"),
    ("get-utf8", "GET", "https://example.amazonaws.com/%E1%88%B4", [], b"", "host;x-amz-date",
     "8318018e0b0f223aa2bbf98705b62bb787dc9c0e678f255a891fd03141be5d85"),
    ("get-unreserved", "GET", "https://example.amazonaws.com/-._~0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnop"
     "qrstuvwxyz", [], b"", "host;x-amz-date", "07ef7494c76fa4850883e2b006601f940f8a34d404d0cfa977f52a65bbf5f24f"),
    ("get-header-value-trim", "GET", "https://example.amazonaws.com/",
     [("My-Header1", " value1"), ("My-Header2", ' "a   b   c"')], b"", "host;my-header1;my-header2;x-amz-date",
     "acc3ed3afb60bb290fc8d2dd0098b9911fcaa05412b367055dee359757a9c736"),
    ("get-header-value-order", "GET", "https://example.amazonaws.com/",
     [("My-Header1", "value4"), ("My-Header1", "value1"), ("My-Header1", "value3"), ("My-Header1", "value2")], b"",
     "host;my-header1;x-amz-date", "08c7e5a9acfcfeb3ab6b2185e75ce8b1deb5e634ec47601a50643f830c755c01"),
    ("post-vanilla", "POST", "https://example.amazonaws.com/", [], b"", "host;x-amz-date",
     "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b"),
    ("post-vanilla-query", "POST", "https://example.amazonaws.com/?Param1=value1", [], b"", "host;x-amz-date",
     "28038455d6de14eafc1f9222cf5aa6f1a96197d7deb8263271d420d138af7f11"),
    ("post-vanilla-query-nonunreserved", "POST", "https://example.amazonaws.com/?%40%23%24%25%5E=&%2B=%2F%2C%3F%3E%3C"
     "%60%22%3B%3A%5C%7C%5D%5B%7B%7D", [], b"", "host;x-amz-date",
     "66c82657c86e26fb25238d0e69f011edc4c6df5ae71119d7cb98ed9b87393c1e"),
    ("post-header-key-sort", "POST", "https://example.amazonaws.com/", [("My-Header1", "value1")], b"",
     "host;my-header1;x-amz-date", "c5410059b04c1ee005303aed430f6e6645f61f4dc9e1461ec8f8916fdf18852c"),
    ("post-header-value-case", "POST", "https://example.amazonaws.com/", [("My-Header1", "VALUE1")], b"",
     "host;my-header1;x-amz-date", "cdbc9802e29d2942e5e10b5bccfdd67c5f22c7c4e8ae67b53629efa58b974b7d"),
    ("post-x-www-form-urlencoded", "POST", "https://example.amazonaws.com/", SUITE_FORM, b"Param1=value1",
     "content-type;host;x-amz-date", "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a"),
    ("post-x-www-form-urlencoded-parameters", "POST", "https://example.amazonaws.com/",
     [("content-type", "application/x-www-form-urlencoded; charset=utf8")], b"Param1=value1",
     "content-type;host;x-amz-date", "1a72ec8f64bd914b0e42e42607c7fbce7fb2c7465f63e3092b3b0d39fa77a6fe"),
]


@pytest.mark.parametrize("name,method,url,extra,payload,signed_headers,expected", SUITE, ids=[v[0] for v in SUITE])
def test_sigv4_reproduces_the_aws_test_suite(name, method, url, extra, payload, signed_headers, expected):
    signed = aws_sigv4.sign(method, url, SUITE_HEADERS + extra, payload, SUITE_KEY, SUITE_SECRET, "us-east-1",
                            "service", SUITE_DATE)
    assert signed.authorization == (
        "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, "
        "SignedHeaders=%s, Signature=%s" % (signed_headers, expected))
    # ... and the verifier accepts exactly that request at that time.
    headers = SUITE_HEADERS + extra + [("Authorization", signed.authorization)]
    now = datetime.datetime(2015, 8, 30, 12, 40, tzinfo=datetime.timezone.utc).timestamp()
    auth = aws_sigv4.verify(method, url, headers, payload, lambda a: SUITE_SECRET, now=now)
    assert auth.signature == expected and auth.region == "us-east-1" and auth.service == "service"


def test_sigv4_canonical_request_and_string_to_sign_of_the_suite():
    signed = aws_sigv4.sign("GET", "https://example.amazonaws.com/", SUITE_HEADERS, b"", SUITE_KEY, SUITE_SECRET,
                            "us-east-1", "service", SUITE_DATE)
    assert signed.canonical_request == ("GET\n/\n\nhost:example.amazonaws.com\nx-amz-date:20150830T123600Z\n\n"
                                        "host;x-amz-date\n"
                                        "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    assert signed.string_to_sign == ("AWS4-HMAC-SHA256\n20150830T123600Z\n20150830/us-east-1/service/aws4_request\n"
                                     "bb579772317eb040ac9ed261061d46c1f17a8133879d6129b6e1c25292927e63")
    signed = aws_sigv4.sign("POST", "https://example.amazonaws.com/", SUITE_FORM + SUITE_HEADERS, b"Param1=value1",
                            SUITE_KEY, SUITE_SECRET, "us-east-1", "service", SUITE_DATE)
    assert signed.canonical_request == (
        "POST\n/\n\ncontent-type:application/x-www-form-urlencoded\nhost:example.amazonaws.com\n"
        "x-amz-date:20150830T123600Z\n\ncontent-type;host;x-amz-date\n"
        "9095672bbd1f56dfc5b65f3e153adc8731a4a654192329106275f4c7b24d0b6e")


def test_sigv4_signing_key_and_the_iam_example_of_aws_documentation():
    # AWS's "derive a signing key" example and its signed IAM ListUsers request (same secret and date).
    key = aws_sigv4.signing_key(SUITE_SECRET, "20150830", "us-east-1", "iam")
    assert key.hex() == "c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9"
    signed = aws_sigv4.sign("GET", "https://iam.amazonaws.com/?Action=ListUsers&Version=2010-05-08",
                            [("content-type", "application/x-www-form-urlencoded; charset=utf-8"),
                             ("host", "iam.amazonaws.com"), ("x-amz-date", SUITE_DATE)], b"",
                            SUITE_KEY, SUITE_SECRET, "us-east-1", "iam", SUITE_DATE)
    assert hashlib.sha256(signed.canonical_request.encode()).hexdigest() == \
        "f536975d06c0309214f805bb90ccff089219ecd68b2577efef23edd43b7e1a59"
    assert signed.signature == "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7"


def google_auth_signed_request(region="us-east-2", secret="secret/with+base64chars", token="session-token"):
    """A GetCallerIdentity request signed by google-auth's own SigV4 signer, as (url, headers list)."""
    signer = aws.RequestSigner(region)
    creds = aws.AwsSecurityCredentials("ASIAEXAMPLEEXAMPLE01", secret, token)
    url = AWS_VERIFICATION_URL.replace("{region}", region)
    options = signer.get_request_options(creds, url, "POST")
    return url, list(options["headers"].items())


def test_sigv4_verifies_google_auths_signer_and_refuses_tampering():
    url, headers = google_auth_signed_request()
    secret_for = lambda auth: "secret/with+base64chars"
    auth = aws_sigv4.verify("POST", url, headers, "", secret_for, expected_service="sts", expected_region="us-east-2")
    assert auth.access_key_id == "ASIAEXAMPLEEXAMPLE01"
    assert auth.signed_headers == ["host", "x-amz-date", "x-amz-security-token"]

    def refusal(**kw):
        args = dict(method="POST", url=url, headers=headers, payload="", secret_for=secret_for,
                    expected_service="sts", expected_region="us-east-2")
        args.update(kw)
        with pytest.raises(aws_sigv4.SigV4Error) as err:
            aws_sigv4.verify(**args)
        return err.value

    assert refusal(secret_for=lambda a: "another secret").code == "SignatureDoesNotMatch"
    assert refusal(payload="Action=Other").code == "SignatureDoesNotMatch"
    tampered = [(k, v + "x" if k == "x-amz-security-token" else v) for k, v in headers]
    assert refusal(headers=tampered).code == "SignatureDoesNotMatch"
    assert "valid region" in refusal(expected_region="eu-west-1").message
    assert refusal(now=time.time() + 16 * 60).message.startswith("Signature expired")
    assert refusal(now=time.time() - 16 * 60).message.startswith("Signature not yet current")
    unsigned = [(k, v) for k, v in headers if k != "Authorization"]
    assert refusal(headers=unsigned).code == "MissingAuthenticationToken"


# --- AWS: the EC2 instance metadata service and STS with a signed GetCallerIdentity ------------------------------

def aws_info(env, audience, target=None, imdsv2=True, verification_url=AWS_VERIFICATION_URL, **extra):
    """An external_account AWS credential configuration, as `gcloud iam workload-identity-pools create-cred-config
    --aws` writes it, with the metadata URLs on the stand-in."""
    source = {
        "environment_id": "aws1",
        "region_url": env.base + "/latest/meta-data/placement/availability-zone",
        "url": env.base + "/latest/meta-data/iam/security-credentials",
        "regional_cred_verification_url": verification_url,
    }
    if imdsv2:
        source["imdsv2_session_token_url"] = env.base + "/latest/api/token"
    info = {
        "type": "external_account",
        "audience": audience,
        "subject_token_type": AWS_TOKEN_TYPE,
        "token_url": env.base + "/v1/token",
        "credential_source": source,
    }
    if target:
        info["service_account_impersonation_url"] = env.iam_url(target, "generateAccessToken")
    info.update(extra)
    return info


def aws_pool(n):
    pool = "projects/%d/locations/global/workloadIdentityPools/aws-pool" % n
    return "//iam.googleapis.com/%s/providers/aws" % pool, "principal://iam.googleapis.com/%s/subject/" % pool


def test_aws_metadata_service_speaks_imdsv2(env):
    base = env.base + "/latest"
    ttl = "X-aws-ec2-metadata-token-ttl-seconds"
    assert requests.put(base + "/api/token", timeout=HTTP_TIMEOUT).status_code == 400  # TTL header missing
    assert requests.put(base + "/api/token", headers={ttl: "21601"}, timeout=HTTP_TIMEOUT).status_code == 400
    assert requests.put(base + "/api/token", headers={ttl: "60", "X-Forwarded-For": "10.0.0.1"},
                        timeout=HTTP_TIMEOUT).status_code == 403
    put = requests.put(base + "/api/token", headers={ttl: "60"}, timeout=HTTP_TIMEOUT)
    assert put.status_code == 200 and put.headers["X-Aws-Ec2-Metadata-Token-Ttl-Seconds"] == "60"
    assert put.headers["Server"] == "EC2ws"
    session = {"X-aws-ec2-metadata-token": put.text}
    zone_url = base + "/meta-data/placement/availability-zone"
    assert requests.get(zone_url, timeout=HTTP_TIMEOUT).status_code == 401  # IMDSv2 required
    forged = {"X-aws-ec2-metadata-token": "forged"}
    assert requests.get(zone_url, headers=forged, timeout=HTTP_TIMEOUT).status_code == 401
    assert requests.get(zone_url, headers=session, timeout=HTTP_TIMEOUT).text == "us-east-1b"
    assert requests.get(base + "/meta-data/iam/security-credentials/", headers=session,
                        timeout=HTTP_TIMEOUT).text == "standin-role"
    creds = requests.get(base + "/meta-data/iam/security-credentials/standin-role", headers=session,
                         timeout=HTTP_TIMEOUT).json()
    assert creds["Code"] == "Success" and creds["Type"] == "AWS-HMAC" and creds["AccessKeyId"] == AWS_DEFAULT_KEY
    assert creds["Token"] and len(creds["SecretAccessKey"]) == 40
    assert datetime.datetime.strptime(creds["Expiration"], "%Y-%m-%dT%H:%M:%SZ") > datetime.datetime.utcnow()
    assert requests.get(base + "/meta-data/iam/security-credentials/other-role", headers=session,
                        timeout=HTTP_TIMEOUT).status_code == 404
    env.control(awsMetadata={"imdsv2": "optional"})
    assert requests.get(zone_url, timeout=HTTP_TIMEOUT).text == "us-east-1b"  # IMDSv1 allowed
    env.control(awsMetadata={"roleName": None})
    assert requests.get(base + "/meta-data/iam/security-credentials", timeout=HTTP_TIMEOUT).status_code == 404


def test_aws_credentials_through_imdsv2_then_impersonation(env):
    target, _ = new_account(env, "aws-target")
    audience, prefix = aws_pool(201)
    env.control(workloadProviders=[{"audience": audience, "subjects": {AWS_DEFAULT_ARN: "ec2-standin"},
                                    "awsAccountId": "111122223333"}],
                grants={prefix + "ec2-standin": [target]})
    creds = aws.Credentials.from_info(aws_info(env, audience, target), scopes=[CLOUD])
    creds.refresh(transport())
    assert creds.token.startswith("ya29.") and creds.valid
    calls = env.calls()
    assert calls["sts"]["byPrincipal"] == {prefix + "ec2-standin": 1}
    assert calls["generateAccessToken"]["byTarget"] == {target: 1}
    # google-auth: a session token (PUT, TTL 300) for the region, another for the role and its credentials.
    imds = [(e["method"], e["path"], e["status"]) for e in env.log("awsMetadata")]
    assert imds == [("PUT", "/latest/api/token", 200),
                    ("GET", "/latest/meta-data/placement/availability-zone", 200),
                    ("PUT", "/latest/api/token", 200),
                    ("GET", "/latest/meta-data/iam/security-credentials", 200),
                    ("GET", "/latest/meta-data/iam/security-credentials/standin-role", 200)]
    sts = env.log("sts")[0]
    assert sts["subjectTokenType"] == AWS_TOKEN_TYPE and sts["options"] is None and sts["userProject"] is None

    # The subject token google-auth sent, as Google documents it.
    token = json.loads(urllib.parse.unquote(creds.retrieve_subject_token(transport())))
    assert token["url"] == "https://sts.us-east-1.amazonaws.com?Action=GetCallerIdentity&Version=2011-06-15"
    assert token["method"] == "POST" and "body" not in token and "data" not in token
    headers = {h["key"]: h["value"] for h in token["headers"]}
    assert sorted(headers) == ["Authorization", "host", "x-amz-date", "x-amz-security-token",
                               "x-goog-cloud-target-resource"]
    assert headers["host"] == "sts.us-east-1.amazonaws.com" and headers["x-goog-cloud-target-resource"] == audience
    assert "SignedHeaders=host;x-amz-date;x-amz-security-token," in headers["Authorization"]


def test_aws_credentials_from_environment_variables(env, monkeypatch):
    audience, prefix = aws_pool(202)
    arn = "arn:aws:iam::444455556666:user/ci-deployer"
    secret = "k7Qx/8vN+long/term+secret+for+the+test00"
    env.control(awsIdentities=[{"accessKeyId": "AKIASTANDINLONGTERM1", "secretAccessKey": secret, "arn": arn}],
                workloadProviders=[{"audience": audience}])
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "AKIASTANDINLONGTERM1")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)
    monkeypatch.setenv("AWS_REGION", "eu-west-3")
    creds = aws.Credentials.from_info(aws_info(env, audience), scopes=[CLOUD])
    creds.refresh(transport())
    assert creds.token.startswith("ya29.")
    calls = env.calls()
    assert calls["awsMetadata"]["count"] == 0  # region and keys from the environment: IMDS never asked
    assert calls["sts"]["byPrincipal"] == {prefix + arn: 1}  # no subjects entry: the ARN itself (Google's default)

    # A session from the environment (AWS_SESSION_TOKEN), the region from AWS_DEFAULT_REGION.
    with requests.Session() as s:
        md = s.get(env.base + "/_control", timeout=HTTP_TIMEOUT).json()["aws"]["identities"][AWS_DEFAULT_KEY]
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", AWS_DEFAULT_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", md["secretAccessKey"])
    monkeypatch.setenv("AWS_SESSION_TOKEN", md["sessionToken"])
    monkeypatch.delenv("AWS_REGION")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "ap-southeast-2")
    creds = aws.Credentials.from_info(aws_info(env, audience), scopes=[CLOUD])
    creds.refresh(transport())
    assert env.calls()["sts"]["byPrincipal"][prefix + AWS_DEFAULT_ARN] == 1
    secret = md["secretAccessKey"]
    wrong = secret[:-1] + ("y" if secret.endswith("x") else "x")  # a random secret ends in "x" once in 64
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", wrong)  # signed with a wrong secret
    with pytest.raises(exceptions.OAuthError, match="invalid_grant: Received invalid AWS response of type "
                                                    "SignatureDoesNotMatch"):
        aws.Credentials.from_info(aws_info(env, audience), scopes=[CLOUD]).refresh(transport())
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", md["secretAccessKey"])
    monkeypatch.delenv("AWS_SESSION_TOKEN")  # the same key without its session token: AWS refuses it
    with pytest.raises(exceptions.OAuthError, match="InvalidClientTokenId"):
        aws.Credentials.from_info(aws_info(env, audience), scopes=[CLOUD]).refresh(transport())


def test_aws_faults_imdsv2_refused_wrong_region_expired_session(env, monkeypatch):
    audience, prefix = aws_pool(203)
    env.control(workloadProviders=[{"audience": audience}])

    env.control(faults={"awsMetadata": {"mode": "imdsv2Token"}})  # the token PUT answers 403
    with pytest.raises(exceptions.RefreshError, match="Unable to retrieve AWS Session Token"):
        aws.Credentials.from_info(aws_info(env, audience), scopes=[CLOUD]).refresh(transport())
    assert env.calls()["awsMetadata"]["byStatus"] == {"403": 1}
    # IMDSv2 required and no imdsv2_session_token_url in the file: the metadata service answers 401.
    with pytest.raises(exceptions.RefreshError, match="Unable to retrieve AWS region"):
        aws.Credentials.from_info(aws_info(env, audience, imdsv2=False), scopes=[CLOUD]).refresh(transport())

    # A wrong region: signed for the instance's region, sent to another region's STS.
    env.control(awsMetadata={"availabilityZone": "eu-west-1a"})
    fixed = "https://sts.us-east-1.amazonaws.com?Action=GetCallerIdentity&Version=2011-06-15"
    with pytest.raises(exceptions.OAuthError, match="SignatureDoesNotMatch.*Credential should be scoped to a valid "
                                                    "region, not 'eu-west-1'"):
        aws.Credentials.from_info(aws_info(env, audience, verification_url=fixed), scopes=[CLOUD]).refresh(transport())
    env.control(awsMetadata={"availabilityZone": "us-east-1b"})

    # The session is over: IMDS still serves the credentials (Expiration in the past), AWS refuses them.
    env.control(awsIdentities=[{"accessKeyId": AWS_DEFAULT_KEY, "expired": True}])
    with pytest.raises(exceptions.OAuthError, match="ExpiredToken"):
        aws.Credentials.from_info(aws_info(env, audience), scopes=[CLOUD]).refresh(transport())
    env.control(awsIdentities=[{"accessKeyId": AWS_DEFAULT_KEY, "expired": False}])

    # A provider bound to another AWS account.
    other_audience, _ = aws_pool(204)
    env.control(workloadProviders=[{"audience": other_audience, "awsAccountId": "999999999999"}])
    with pytest.raises(exceptions.OAuthError, match="invalid_grant"):
        aws.Credentials.from_info(aws_info(env, other_audience), scopes=[CLOUD]).refresh(transport())
    assert env.calls()["sts"]["byStatus"] == {"400": 3}


def post_sts(env, subject_token, audience, token_type=AWS_TOKEN_TYPE, base=None, **extra):
    form = {"grant_type": "urn:ietf:params:oauth:grant-type:token-exchange", "audience": audience,
            "scope": CLOUD, "requested_token_type": "urn:ietf:params:oauth:token-type:access_token",
            "subject_token": subject_token, "subject_token_type": token_type}
    form.update(extra)
    return requests.post((base or env.base) + "/v1/token", data=form, timeout=HTTP_TIMEOUT)


def test_aws_subject_tokens_stale_retargeted_or_malformed(env, monkeypatch):
    audience, prefix = aws_pool(205)
    env.control(workloadProviders=[{"audience": audience}])
    creds = aws.Credentials.from_info(aws_info(env, audience), scopes=[CLOUD])
    fresh = creds.retrieve_subject_token(transport())
    assert post_sts(env, fresh, audience).status_code == 200
    # Query-escaped as Google's Go and Java libraries send it ('+' for a space): read the same.
    go_style = urllib.parse.quote_plus(urllib.parse.unquote(fresh))
    assert "+" in go_style and post_sts(env, go_style, audience).status_code == 200
    assert post_sts(env, fresh, aws_pool(206)[0]).json()["error"] == "invalid_target"

    # Signed 20 minutes ago (google-auth's clock moved back while it signs).
    real_utcnow = google.auth._helpers.utcnow
    monkeypatch.setattr(google.auth._helpers, "utcnow", lambda: real_utcnow() - datetime.timedelta(minutes=20))
    stale = creds.retrieve_subject_token(transport())
    monkeypatch.setattr(google.auth._helpers, "utcnow", real_utcnow)
    r = post_sts(env, stale, audience)
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant"
    assert "SignatureDoesNotMatch with error message: Signature expired" in r.json()["error_description"]

    # The same signed request for another provider: x-goog-cloud-target-resource names the first.
    other, _ = aws_pool(207)
    env.control(workloadProviders=[{"audience": other}])
    r = post_sts(env, fresh, other)
    assert r.status_code == 400 and "x-goog-cloud-target-resource" in r.json()["error_description"]

    request = json.loads(urllib.parse.unquote(fresh))
    for broken in (dict(request, url="https://sts.us-east-1.amazonaws.com?Action=AssumeRole&Version=2011-06-15"),
                   dict(request, url="https://evil.example.com?Action=GetCallerIdentity&Version=2011-06-15"),
                   dict(request, method="GET"),
                   dict(request, headers=[h for h in request["headers"]
                                          if h["key"] != "x-goog-cloud-target-resource"])):
        r = post_sts(env, urllib.parse.quote(json.dumps(broken)), audience)
        assert r.status_code == 400 and r.json() == {"error": "invalid_request",
                                                     "error_description": "AWS request has invalid format."}
    assert post_sts(env, "not json", audience).json()["error_description"] == "AWS request has invalid format."


# --- executable-sourced credentials (google.auth.pluggable) ----------------------------------------------------

def executable_info(env, audience, command, target=None, output_file=None, timeout_millis=5000):
    executable = {"command": command, "timeout_millis": timeout_millis}
    if output_file:
        executable["output_file"] = output_file
    info = {
        "type": "external_account",
        "audience": audience,
        "subject_token_type": "urn:ietf:params:oauth:token-type:id_token",
        "token_url": env.base + "/v1/token",
        "credential_source": {"executable": executable},
    }
    if target:
        info["service_account_impersonation_url"] = env.iam_url(target, "generateAccessToken")
    return info


def exec_pool(n):
    pool = "projects/%d/locations/global/workloadIdentityPools/exec-pool" % n
    return "//iam.googleapis.com/%s/providers/exec" % pool, "principal://iam.googleapis.com/%s/subject/" % pool


def test_pluggable_credentials_run_the_executable_and_use_its_cache(env, monkeypatch, tmp_path):
    target, _ = new_account(env, "exec-target")
    audience, prefix = exec_pool(301)
    env.control(workloadProviders=[{"audience": audience, "subjects": {"oidc-from-exe": "build-42"}}],
                grants={prefix + "build-42": [target]})
    record, cache = tmp_path / "runs.jsonl", tmp_path / "cache.json"
    command = "%s --token oidc-from-exe --record %s --write-output-file" % (EXECUTABLE, record)
    info = executable_info(env, audience, command, target, output_file=str(cache))
    with pytest.raises(exceptions.MalformedError, match="GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES"):
        pluggable.Credentials.from_info(info, scopes=[CLOUD]).refresh(transport())
    assert not record.exists()  # not run unless the operator allows executables

    monkeypatch.setenv("GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES", "1")
    creds = pluggable.Credentials.from_info(info, scopes=[CLOUD])
    creds.refresh(transport())
    assert creds.token.startswith("ya29.")
    assert env.calls()["sts"]["byPrincipal"] == {prefix + "build-42": 1}
    runs = [json.loads(line) for line in record.read_text().splitlines()]
    assert len(runs) == 1
    # google-auth runs the executable from the impersonation's source credentials, a copy without
    # service_account_impersonation_url: so it sets no GOOGLE_EXTERNAL_ACCOUNT_IMPERSONATED_EMAIL and an empty
    # GOOGLE_EXTERNAL_ACCOUNT_ID, although Google's documentation of executable-sourced credentials has the
    # impersonated email in both (what the executable is given is the documented set; google-auth gives this).
    assert runs[0]["env"] == {
        "GOOGLE_EXTERNAL_ACCOUNT_AUDIENCE": audience,
        "GOOGLE_EXTERNAL_ACCOUNT_TOKEN_TYPE": "urn:ietf:params:oauth:token-type:id_token",
        "GOOGLE_EXTERNAL_ACCOUNT_ID": "",
        "GOOGLE_EXTERNAL_ACCOUNT_INTERACTIVE": "0",
        "GOOGLE_EXTERNAL_ACCOUNT_OUTPUT_FILE": str(cache),
        "GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES": "1",
        "GOOGLE_EXTERNAL_ACCOUNT_REVOKE": "0",
    }
    cached = json.loads(cache.read_text())
    assert cached["version"] == 1 and cached["success"] is True and cached["id_token"] == "oidc-from-exe"

    # A fresh credentials object finds the unexpired response in output_file and does not run the executable.
    pluggable.Credentials.from_info(info, scopes=[CLOUD]).refresh(transport())
    assert len(record.read_text().splitlines()) == 1
    # An expired cached response (or one without expiration_time) runs it again.
    cache.write_text(json.dumps(dict(cached, expiration_time=int(time.time()) - 1)))
    pluggable.Credentials.from_info(info, scopes=[CLOUD]).refresh(transport())
    assert len(record.read_text().splitlines()) == 2
    assert env.calls()["sts"]["byStatus"] == {"200": 3}


def test_pluggable_executable_faults(env, monkeypatch, tmp_path):
    audience, _ = exec_pool(302)
    env.control(workloadProviders=[{"audience": audience, "subjects": {"ok-token": "ok"}}])
    monkeypatch.setenv("GOOGLE_EXTERNAL_ACCOUNT_ALLOW_EXECUTABLES", "1")

    def refresh(args, **kw):
        info = executable_info(env, audience, "%s %s" % (EXECUTABLE, args), **kw)
        pluggable.Credentials.from_info(info, scopes=[CLOUD]).refresh(transport())

    refresh("--token ok-token --no-expiry")  # expiration_time may be left out on stdout
    with pytest.raises(exceptions.RefreshError, match="code: 401, message: Caller not authorized"):
        refresh("--mode fail")
    with pytest.raises(ValueError):  # google-auth's json.loads of the output: JSONDecodeError
        refresh("--mode garbage")
    with pytest.raises(exceptions.RefreshError, match="non-zero return code 1"):
        refresh("--mode exit")
    with pytest.raises(exceptions.RefreshError, match="unsupported version 2"):
        refresh("--mode version2")
    with pytest.raises(exceptions.RefreshError, match="expired"):
        refresh("--token ok-token --expires-in -10")
    with pytest.raises(exceptions.MalformedError, match="token_type"):
        refresh("--mode no-token-type")
    with pytest.raises(exceptions.InvalidValue, match="between 5 and 120 seconds"):
        refresh("--token ok-token", timeout_millis=4999)
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):  # google-auth lets the timeout propagate as it is
        refresh("--mode sleep --sleep 30", timeout_millis=5000)
    assert 5 <= time.monotonic() - started < 15
    assert env.calls()["sts"]["byStatus"] == {"200": 1}


# --- X.509 certificates: mutual TLS to STS --------------------------------------------------------------------

def x509_info(env, audience, config_file, target=None, trust_chain=None):
    """An X.509 credential configuration, as `gcloud iam workload-identity-pools create-cred-config
    --credential-cert-path ...` writes it, with the mTLS endpoints on the stand-in."""
    certificate = {"use_default_certificate_config": False, "certificate_config_location": config_file}
    if trust_chain:
        certificate["trust_chain_path"] = trust_chain
    info = {
        "type": "external_account",
        "audience": audience,
        "subject_token_type": MTLS_TOKEN_TYPE,
        "token_url": env.mtls_base + "/v1/token",
        "credential_source": {"certificate": certificate},
    }
    if target:
        info["service_account_impersonation_url"] = (env.mtls_base + "/v1/projects/-/serviceAccounts/%s:"
                                                     "generateAccessToken" % target)
    return info


def x509_pool(n):
    pool = "projects/%d/locations/global/workloadIdentityPools/x509-pool" % n
    return "//iam.googleapis.com/%s/providers/x509" % pool, "principal://iam.googleapis.com/%s/subject/" % pool


def test_x509_credentials_exchange_over_mtls_then_impersonate(env):
    target, _ = new_account(env, "x509-target")
    audience, prefix = x509_pool(401)
    state = env.control(workloadProviders=[{"audience": audience, "subjects": {"tokengate-workload": "gateway"}}],
                        grants={prefix + "gateway": [target]})
    workload = state["x509"]["clients"]["workload"]
    assert state["mtlsBaseUrl"] == env.mtls_base and state["x509"]["caFile"] == env.ca_file
    with open(workload["certificateConfigFile"]) as f:
        assert json.load(f) == {"cert_configs": {"workload": {"cert_path": workload["certFile"],
                                                              "key_path": workload["keyFile"]}}}
    assert os.stat(workload["keyFile"]).st_mode & 0o077 == 0

    creds = identity_pool.Credentials.from_info(x509_info(env, audience, workload["certificateConfigFile"], target),
                                                scopes=[CLOUD])
    creds.refresh(mtls_transport(env))
    assert creds.token.startswith("ya29.") and creds.valid
    calls = env.calls()
    assert calls["sts"]["byPrincipal"] == {prefix + "gateway": 1}
    assert calls["mtlsHandshake"]["byPrincipal"]["tokengate-workload"] >= 1
    sts, = env.log("sts")
    assert sts["mtls"] is True and sts["subjectTokenType"] == MTLS_TOKEN_TYPE
    gat, = env.log("generateAccessToken")
    assert gat["mtls"] is True and gat["principal"] == prefix + "gateway"

    # The subject token: a JSON array of the base64 DER leaf (json.dumps with its default ", " separator).
    token = creds.retrieve_subject_token(None)
    with open(workload["certFile"], "rb") as f:
        leaf = x509_der(f.read())
    assert token == json.dumps([base64.b64encode(leaf).decode()])


def x509_der(pem):
    from cryptography import x509 as cx509
    from cryptography.hazmat.primitives import serialization
    return cx509.load_pem_x509_certificate(pem).public_bytes(serialization.Encoding.DER)


def test_x509_intermediate_needs_its_trust_chain(env):
    audience, prefix = x509_pool(402)
    state = env.control(workloadProviders=[{"audience": audience}],
                        x509Clients=[{"name": "inter", "commonName": "inter-workload", "intermediate": True,
                                      "keyType": "rsa"}])
    client = state["x509"]["clients"]["inter"]
    creds = identity_pool.Credentials.from_info(
        x509_info(env, audience, client["certificateConfigFile"], trust_chain=client["trustChainFile"]), scopes=[CLOUD])
    creds.refresh(mtls_transport(env))
    assert env.calls()["sts"]["byPrincipal"] == {prefix + "inter-workload": 1}  # default: the leaf's CN
    assert len(json.loads(creds.retrieve_subject_token(None))) == 2  # leaf, intermediate

    # Without trust_chain_path google-auth sends the leaf alone, which does not lead to the CA.
    bare = identity_pool.Credentials.from_info(x509_info(env, audience, client["certificateConfigFile"]),
                                               scopes=[CLOUD])
    with pytest.raises(exceptions.OAuthError, match="invalid_grant.*trust anchor"):
        bare.refresh(mtls_transport(env))


def test_x509_faults_untrusted_unknown_expired_and_plain_port(env):
    audience, _ = x509_pool(403)
    state = env.control(workloadProviders=[{"audience": audience}],
                        x509Clients=[{"name": "untrusted", "ca": "untrusted"}, {"name": "unknown", "ca": "unknown"},
                                     {"name": "expired", "expired": True}])
    clients = state["x509"]["clients"]

    def refresh(name, **kw):
        info = x509_info(env, audience, clients[name]["certificateConfigFile"])
        info.update(kw)
        identity_pool.Credentials.from_info(info, scopes=[CLOUD]).refresh(mtls_transport(env))

    # A certificate of a CA that TLS accepts but the provider does not trust: STS refuses it.
    with pytest.raises(exceptions.OAuthError, match="invalid_grant.*trust anchor"):
        refresh("untrusted")
    # A certificate of a CA the server does not know, or one that has expired: the handshake fails.
    for name in ("unknown", "expired"):
        with pytest.raises(exceptions.TransportError):
            refresh(name)
    calls = env.calls()
    assert calls["sts"]["byStatus"] == {"400": 1}
    assert calls["mtlsHandshake"]["byStatus"]["refused"] >= 2
    # An mTLS subject token sent to the plain port (no client certificate there).
    with pytest.raises(exceptions.OAuthError, match="invalid_request.*mutual TLS"):
        refresh("workload", token_url=env.base + "/v1/token")
    # No client certificate at all: no handshake.
    with pytest.raises(requests.exceptions.RequestException):
        requests.get(env.mtls_base + "/_control", verify=env.ca_file, timeout=HTTP_TIMEOUT)


# --- quota project and workforce pool user project ------------------------------------------------------------

def test_quota_project_and_workforce_user_project_are_sent_as_google_auth_sends_them(env, tmp_path):
    target, _ = new_account(env, "quota-target")
    audience = "//iam.googleapis.com/projects/501/locations/global/workloadIdentityPools/q-pool/providers/q"
    principal = "principal://iam.googleapis.com/projects/501/locations/global/workloadIdentityPools/q-pool/subject/q"
    env.control(workloadProviders=[{"audience": audience, "subjects": {"q-token": "q"}}], grants={principal: [target]})
    path = write_external_account(env, tmp_path, audience, "q-token", target)
    with open(path) as f:
        info = dict(json.load(f), quota_project_id="billing-project")
    creds = identity_pool.Credentials.from_info(info, scopes=[CLOUD])
    creds.refresh(transport())
    sts, = env.log("sts")
    gat, = env.log("generateAccessToken")
    assert sts["userProject"] is None  # google-auth sends no quota project to STS ...
    assert gat["userProject"] == "billing-project"  # ... but x-goog-user-project on generateAccessToken
    env.control(grants={target: [target]})
    sign_jwt(creds, target, fleet_claims(target))  # ... and on every API call it authorizes
    assert env.log("signJwt")[0]["userProject"] == "billing-project"

    # A workforce pool: workforce_pool_user_project goes in STS "options" (google-auth: percent-encoded JSON).
    workforce = "//iam.googleapis.com/locations/global/workforcePools/staff/providers/oidc"
    env.control(workloadProviders=[{"audience": workforce, "subjects": {"staff-token": "alice@example.com"}}],
                reset=["calls"])
    token_file = tmp_path / "staff-token.txt"
    token_file.write_text("staff-token")
    staff = identity_pool.Credentials.from_info({
        "type": "external_account", "audience": workforce,
        "subject_token_type": "urn:ietf:params:oauth:token-type:id_token", "token_url": env.base + "/v1/token",
        "workforce_pool_user_project": "123456789012", "credential_source": {"file": str(token_file)}},
        scopes=[CLOUD])
    staff.refresh(transport())
    sts, = env.log("sts")
    assert sts["options"] == {"userProject": "123456789012"}
    assert sts["principal"] == ("principal://iam.googleapis.com/locations/global/workforcePools/staff/subject/"
                                "alice@example.com")
    # Options as plain JSON (Google's Go and Java libraries) are read the same; anything else is refused.
    assert post_sts(env, "staff-token", workforce, "urn:ietf:params:oauth:token-type:id_token",
                    options='{"userProject": "42"}').status_code == 200
    assert env.log("sts")[-1]["options"] == {"userProject": "42"}
    assert post_sts(env, "staff-token", workforce, "urn:ietf:params:oauth:token-type:id_token",
                    options="[1]").json()["error"] == "invalid_request"


def test_control_rejects_bad_aws_and_x509_entries(env):
    for body in ({"awsIdentities": [{"accessKeyId": "lower-case"}]},
                 {"awsIdentities": [{"accessKeyId": "AKIANEWKEYNOSECRET01", "arn": AWS_DEFAULT_ARN}]},
                 {"awsIdentities": [{"accessKeyId": "AKIANEWKEYBADARN0001", "secretAccessKey": "s", "arn": "role"}]},
                 {"awsIdentities": [{"accessKeyId": "AKIALONGTERMEXPIRED1", "secretAccessKey": "s",
                                     "arn": AWS_DEFAULT_ARN, "expired": True}]},
                 {"awsMetadata": {"imdsv2": "sometimes"}},
                 {"awsMetadata": {"accessKeyId": "AKIANOTREGISTERED001"}},
                 {"x509Clients": [{"name": "../escape"}]},
                 {"x509Clients": [{"name": "w", "ca": "elsewhere"}]},
                 {"faults": {"signJwt": {"mode": "imdsv2Token"}}},
                 {"faults": {"awsMetadata": {"mode": "noKid"}}},
                 {"faults": {"mtlsHandshake": {"status": 500}}}):
        r = requests.post(env.base + "/_control", json=body, timeout=HTTP_TIMEOUT)
        assert r.status_code == 400, body
