"""Proves google_standin.py behaves like Google, with Google's own Python library google-auth as the
independent party. Loopback only: the stand-in binds 127.0.0.1, and an autouse guard makes any attempt of
this process to resolve or connect to anything else fail the test.

Run: python3 -m pip install google-auth requests pytest && python3 -m pytest -q Tests/Peers/google/test_google_standin.py

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
"""

import base64
import datetime
import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time

import pytest
import requests
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.exceptions import InvalidSignature

import google.auth
import google.auth.transport.requests
from google.auth import compute_engine, exceptions, iam, identity_pool, impersonated_credentials, jwt
from google.auth.compute_engine import _metadata
from google.oauth2 import credentials as user_credentials
from google.oauth2 import service_account

HERE = os.path.dirname(os.path.abspath(__file__))
STANDIN = os.path.join(HERE, "google_standin.py")
CLOUD = "https://www.googleapis.com/auth/cloud-platform"
FLEET_AUD = "https://fleetengine.googleapis.com/"
DEFAULT_SA = "standin-default@standin-project.iam.gserviceaccount.com"
HTTP_TIMEOUT = 10


# --- the stand-in process --------------------------------------------------------------------------------

class StandIn:
    def __init__(self, proc, port, state_dir):
        self.proc, self.port, self.state_dir = proc, port, state_dir
        self.base = "http://127.0.0.1:%d" % port
        self.host = "127.0.0.1:%d" % port

    def control(self, **body):
        r = requests.post(self.base + "/_control", json=body, timeout=HTTP_TIMEOUT)
        assert r.status_code == 200, r.text
        return r.json()

    def calls(self):
        return requests.get(self.base + "/_control/calls", timeout=HTTP_TIMEOUT).json()["calls"]

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
        port = json.loads(line["text"])["port"]
        yield StandIn(proc, port, str(state_dir))
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
                 "GOOGLE_SDK_EXPERIMENTAL_PYTHON_REGIONAL_ACCESS_BOUNDARY_LOOKUP_ENABLED"):
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
    standin.control(reset=["faults", "calls"], tokenLifetimeSec=None)


def transport():
    return google.auth.transport.requests.Request()


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
