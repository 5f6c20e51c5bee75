"""The browser suite's setting: the real gateway, two web origins and a headless Chromium, all on loopback.

  * keys made here with Python's cryptography, never committed: a Fleet Engine service-account key (RSA 2048, a
    Google key file, mode 0600) the gateway's static-key backend signs with, and the identity provider's key
    (P-256) whose public JWKS the gateway's `jwt` client reads; session tokens are signed here (ES256);
  * the gateway: the binary in TOKENGATE_BINARY (default `$(swift build --show-bin-path)/tokengate`), `serve` on
    127.0.0.1 with both listeners on port 0, the ports read from its start-up lines (`tokengate listening on …`,
    `tokengate admin listening on …`), as scripts/check-image reads them; its audit log, an admin key for ending
    trips, and `cors: { allowedOrigins: [the page's origin] }`;
  * more providers for the error cases: `browser-down` and `browser-breaker` fetch from an upstream nobody listens
    on (503 `backend_unavailable`; the second's circuit opens after one failure, so its next answer carries a
    `Retry-After` of 10 s), `browser-capped` allows each caller one token an hour (the second is 429 with a
    `Retry-After` of up to an hour), and `browser-ids` gives any trip's token to an API key (the ID tests);
  * two Python http.servers on 127.0.0.1, each its own origin, serving page/index.html and
    Client/JavaScript/tokengate-fetcher.js: the first is listed in `cors:`, the second is not; both answer any path
    under /redirect/ with a 302 elsewhere, counting those requests, and any path under /slow/ only after 2 s;
  * Chromium (Debian's `chromium` and `chromium-driver`, or CHROMIUM_BINARY and CHROMEDRIVER) through selenium,
    headless, with no proxy.

Every wait is bounded; the gateway and the page servers are stopped at the end, the gateway killed if it does
not exit within 10 s, and the key files are deleted. A screenshot of the page after each test, the gateway's
log, audit log and configuration, and Chromium's version go to BROWSER_ARTIFACTS (default a new temporary
directory), whose path the run prints at the end.
"""

import base64
import ctypes
import hashlib
import http.server
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
FETCHER_JS = REPO / "Client" / "JavaScript" / "tokengate-fetcher.js"
PAGE_HTML = HERE / "page" / "index.html"

PROVIDER = "browser-fleet"
LIMITED_PROVIDER = "browser-limited"
DOWN_PROVIDER = "browser-down"
BREAKER_PROVIDER = "browser-breaker"
CAPPED_PROVIDER = "browser-capped"
IDS_PROVIDER = "browser-ids"
PROJECT = "browser-fleet"
SIGNER = "fleet-engine-signer@%s.iam.gserviceaccount.com" % PROJECT
ISSUER = "https://login.browser-test.invalid/"
AUDIENCE = "tokengate"
FLEET_ENGINE_AUDIENCE = "https://fleetengine.googleapis.com/"
HTTP_TIMEOUT = 10
START_TIMEOUT = 30

_RUN = {}


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text):
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def fetch_url(method, url, headers=None, timeout=HTTP_TIMEOUT):
    """(status, headers, body bytes) of one request, errors included; never through a proxy."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    request = urllib.request.Request(url, method=method, headers=headers or {})
    try:
        with opener.open(request, timeout=timeout) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


# --- keys and tokens --------------------------------------------------------------------------------------------

class Keys:
    """The Fleet Engine signing key and the identity provider's key, written under `directory` (0600)."""

    def __init__(self, directory):
        directory.mkdir(mode=0o700, exist_ok=True)
        self.directory = directory
        self.fleet_engine = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.fleet_engine_kid = "browser-test-" + secrets.token_hex(8)
        self.idp = ec.generate_private_key(ec.SECP256R1())
        self.idp_kid = "browser-idp-" + secrets.token_hex(4)
        pem = self.fleet_engine.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()).decode()
        self.service_account_file = self._write("fleet-engine.json", json.dumps({
            "type": "service_account", "project_id": PROJECT, "private_key_id": self.fleet_engine_kid,
            "private_key": pem, "client_email": SIGNER, "token_uri": "https://oauth2.googleapis.com/token",
        }), 0o600)
        self.fleet_engine_public_file = self._write("fleet-engine.pub.pem", self.fleet_engine.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode(), 0o644)
        self.ids_api_key = "tg_browser_ids_" + secrets.token_hex(16)
        numbers = self.idp.public_key().public_numbers()
        self.idp_jwks_file = self._write("idp.jwks.json", json.dumps({"keys": [{
            "kty": "EC", "crv": "P-256", "kid": self.idp_kid, "use": "sig", "alg": "ES256",
            "x": b64url(numbers.x.to_bytes(32, "big")), "y": b64url(numbers.y.to_bytes(32, "big")),
        }]}), 0o644)

    def _write(self, name, text, mode):
        path = self.directory / name
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(text)
        os.chmod(path, mode)
        return path

    def session(self, subject="rider-7", lifetime=3600, issued_ago=0, **claims):
        """A session token of the app's identity provider (ES256), with `claims` besides the registered ones."""
        now = int(time.time()) - issued_ago
        header = {"alg": "ES256", "typ": "JWT", "kid": self.idp_kid}
        payload = {"iss": ISSUER, "aud": AUDIENCE, "sub": subject, "iat": now, "exp": now + lifetime, **claims}
        signing_input = "%s.%s" % (b64url(json.dumps(header).encode()), b64url(json.dumps(payload).encode()))
        r, s = decode_dss_signature(self.idp.sign(signing_input.encode(), ec.ECDSA(hashes.SHA256())))
        return signing_input + "." + b64url(r.to_bytes(32, "big") + s.to_bytes(32, "big"))

    def verify_fleet_engine_token(self, token):
        """The claims of a Fleet Engine token, after checking its RS256 signature with our key and its header."""
        header_part, payload_part, signature_part = token.split(".")
        self.fleet_engine.public_key().verify(
            b64url_decode(signature_part), ("%s.%s" % (header_part, payload_part)).encode(),
            padding.PKCS1v15(), hashes.SHA256())
        header = json.loads(b64url_decode(header_part))
        claims = json.loads(b64url_decode(payload_part))
        assert header == {"alg": "RS256", "typ": "JWT", "kid": self.fleet_engine_kid}, header
        assert claims["iss"] == claims["sub"] == SIGNER, claims
        assert claims["aud"] == FLEET_ENGINE_AUDIENCE, claims
        assert 0 < claims["exp"] - claims["iat"] <= 3600, claims
        return claims


# --- the web origins --------------------------------------------------------------------------------------------

class PageServer:
    """One origin serving the test page at / and the fetcher module at /tokengate-fetcher.js."""

    def __init__(self):
        self.redirects = 0
        server = self
        files = {
            "/": (PAGE_HTML, "text/html; charset=utf-8"),
            "/index.html": (PAGE_HTML, "text/html; charset=utf-8"),
            "/tokengate-fetcher.js": (FETCHER_JS, "text/javascript; charset=utf-8"),
        }

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                if self.path.startswith("/redirect/"):
                    # Where a misconfigured proxy would send the app's credential: it must never be followed.
                    server.redirects += 1
                    self.send_response(302)
                    self.send_header("Location", "http://127.0.0.1:9/elsewhere")
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if self.path.startswith("/slow/"):
                    time.sleep(2)                                   # longer than the fetcher's timeoutMs in the test
                    try:
                        self.send_error(503)
                    except OSError:
                        pass                                        # the fetcher gave up and closed the connection
                    return
                entry = files.get(self.path.split("?", 1)[0])
                if entry is None:
                    self.send_error(404)
                    return
                body = entry[0].read_bytes()
                self.send_response(200)
                self.send_header("Content-Type", entry[1])
                self.send_header("Content-Length", str(len(body)))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.origin = "http://127.0.0.1:%d" % self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, name="page " + self.origin, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


# --- the gateway ------------------------------------------------------------------------------------------------

def gateway_binary():
    binary = os.environ.get("TOKENGATE_BINARY")
    if not binary:
        try:
            bin_path = subprocess.run(["swift", "build", "--show-bin-path"], cwd=REPO, capture_output=True, text=True,
                                      timeout=120, check=True).stdout.strip()
        except (OSError, subprocess.SubprocessError) as error:
            pytest.fail("set TOKENGATE_BINARY to a built tokengate (swift build --show-bin-path failed: %s)" % error)
        binary = os.path.join(bin_path, "tokengate")
    if not os.access(binary, os.X_OK):
        pytest.fail("no tokengate binary at %s: build it (swift build) or set TOKENGATE_BINARY" % binary)
    return binary


class Gateway:
    def __init__(self, binary, directory, keys, allowed_origin):
        self.directory, self.keys = directory, keys
        self.admin_key = "tg_admin_" + secrets.token_hex(16)
        self.audit_path = directory / "audit.jsonl"
        self.log_path = directory / "gateway.log"
        key_file = keys.service_account_file.relative_to(directory).as_posix()
        all_types = ["consumer", "driver", "delivery-driver", "delivery-consumer", "fleet-reader",
                     "delivery-fleet-reader"]
        keys_block = "".join("        %s: [{ serviceAccountFile: %s }]\n" % (t, key_file) for t in all_types)
        client = """      - name: web-app
        type: jwt
        jwksFile: %s
        issuer: %s
        audience: %s
        allow:
          consumer: { claim: trip_ids }
          delivery-consumer: { claim: shipment_ids }
          driver: { claim: vehicle_ids }
          delivery-driver: { claim: delivery_vehicle_ids }
          fleet-reader: whole-fleet
          delivery-fleet-reader: whole-fleet
""" % (keys.idp_jwks_file.relative_to(directory).as_posix(), ISSUER, AUDIENCE)
        dead_port = unused_port()
        public_key = keys.fleet_engine_public_file.relative_to(directory).as_posix()

        def unreachable(name, breaker):
            return """  %s:
    cors: { allowedOrigins: ["%s"] }
    backend:
      type: upstream-http
      url: http://127.0.0.1:%d/tokens/{tokenType}?tripId={tripId}
      tokenTypes: [consumer]
      retries: { maxAttempts: 1 }
      timeouts: { connect: 1s, total: 2s }
      circuitBreaker: %s
      verify: [{ keyFile: %s, keyId: %s, serviceAccount: %s }]
    clients:
%s""" % (name, allowed_origin, dead_port, breaker, public_key, keys.fleet_engine_kid, SIGNER, client)

        extra = unreachable(DOWN_PROVIDER, "off") + unreachable(
            BREAKER_PROVIDER, "{ consecutiveFailures: 1, openFor: 10s }") + """  %(capped)s:
    cors: { allowedOrigins: ["%(origin)s"] }
    rateLimits: { caller: { rate: 1/h, burst: 1 } }
    backend: { type: static-key, keys: { consumer: [{ serviceAccountFile: %(key)s }] } }
    clients:
%(client)s  %(ids)s:
    cors: { allowedOrigins: ["%(origin)s"] }
    backend: { type: static-key, keys: { consumer: [{ serviceAccountFile: %(key)s }] } }
    clients:
      - { name: id-tests, type: api-key, keySha256: %(idsKey)s, allow: { consumer: any } }
""" % {"capped": CAPPED_PROVIDER, "origin": allowed_origin, "key": key_file, "client": client,
       "ids": IDS_PROVIDER, "idsKey": hashlib.sha256(keys.ids_api_key.encode()).hexdigest()}
        config = """# Tests/Browser: written by conftest.py for one run.
server:
  host: 127.0.0.1
  port: 0
  admin: { host: 127.0.0.1, port: 0 }
  logFormat: text
audit: { path: audit.jsonl }
adminKeys:
  - { name: browser-tests, keySha256: %(admin)s }
providers:
  %(provider)s:
    cors: { allowedOrigins: ["%(origin)s"], maxAge: 60s }
    backend:
      type: static-key
      tokenLifetime: 1h
      keys:
%(keys)s    clients:
%(client)s  %(limited)s:
    cors: { allowedOrigins: ["%(origin)s"] }
    rateLimits: { context: { rate: 60/min, burst: 1 } }
    backend:
      type: static-key
      keys:
        consumer: [{ serviceAccountFile: %(key)s }]
    clients:
%(client)s%(extra)s""" % {"admin": hashlib.sha256(self.admin_key.encode()).hexdigest(), "provider": PROVIDER,
                 "origin": allowed_origin, "keys": keys_block, "client": client, "limited": LIMITED_PROVIDER,
                 "key": key_file, "extra": extra}
        self.config_path = directory / "config.yaml"
        self.config_path.write_text(config)
        self.log = open(self.log_path, "wb")
        self.process = subprocess.Popen([binary, "serve", "--config", str(self.config_path)], cwd=directory,
                                        stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT,
                                        start_new_session=True, preexec_fn=_die_with_parent)

    def wait_started(self):
        self.url, self.admin_url = self._wait_listening()
        self._wait_ready()

    def _wait_listening(self):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            text = self.log_path.read_text(errors="replace")
            public = re.search(r"^tokengate listening on (http://127\.0\.0\.1:\d+)", text, re.M)
            admin = re.search(r"^tokengate admin listening on (http://127\.0\.0\.1:\d+)", text, re.M)
            if public and admin:
                return public.group(1), admin.group(1)
            if self.process.poll() is not None:
                pytest.fail("the gateway exited with %s before listening:\n%s" % (self.process.returncode, text))
            time.sleep(0.05)
        pytest.fail("the gateway did not say it listens within %d s:\n%s" % (START_TIMEOUT, self.log_text()))

    def _wait_ready(self):
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            try:
                if fetch_url("GET", self.admin_url + "/readyz", timeout=2)[0] == 200:
                    return
            except OSError:
                pass
            time.sleep(0.1)
        pytest.fail("/readyz did not answer 200 within %d s:\n%s" % (START_TIMEOUT, self.log_text()))

    def log_text(self):
        return self.log_path.read_text(errors="replace")

    def metrics(self):
        """{(name, frozenset of label pairs): value} of the admin listener's /metrics."""
        status, _, body = fetch_url("GET", self.admin_url + "/metrics")
        assert status == 200, body
        samples = {}
        for line in body.decode().splitlines():
            match = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$", line)
            if match:
                labels = frozenset(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"', match.group(2) or ""))
                samples[(match.group(1), labels)] = float(match.group(3))
        return samples

    def counter(self, name, **labels):
        """The sum of a metric's samples whose labels include `labels`."""
        wanted = set(labels.items())
        return sum(value for (metric, pairs), value in self.metrics().items() if metric == name and wanted <= pairs)

    def audit(self):
        if not self.audit_path.exists():
            return []
        return [json.loads(line) for line in self.audit_path.read_text().splitlines() if line.strip()]

    def end_context(self, token_type, context_id, provider=PROVIDER):
        status, _, body = fetch_url("POST", "%s/admin/v1/providers/%s/contexts/%s/%s/end" % (
            self.admin_url, provider, token_type, context_id), {"Authorization": "Bearer " + self.admin_key})
        assert status == 200, body
        return json.loads(body)

    def exposed_headers(self, origin):
        """The Access-Control-Expose-Headers a listed origin gets (lower case)."""
        session = self.keys.session(trip_ids=["trip-probe"])
        _, headers, _ = fetch_url("GET", "%s/v1/providers/%s/tokens/consumer?tripId=trip-probe" % (self.url, PROVIDER),
                             {"Origin": origin, "Authorization": "Bearer " + session})
        value = headers.get("Access-Control-Expose-Headers") or ""
        return [name.strip().lower() for name in value.split(",") if name.strip()]

    def stop(self):
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        self.log.close()


def unused_port():
    """A loopback port nobody listens on now: connections to it are refused."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _die_with_parent():
    """In the gateway's process before exec: SIGKILL it when this test process ends, however it ends."""
    PR_SET_PDEATHSIG = 1
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


# --- the browser ------------------------------------------------------------------------------------------------

def _which(env, *names):
    if os.environ.get(env):
        return os.environ[env]
    for name in names:
        found = shutil.which(name)
        if found:
            return found
    return None


class Page:
    """The test page in the browser, driven through window.harness."""

    SCRIPT = """
const done = arguments[arguments.length - 1];
const [method, args] = arguments;
Promise.resolve().then(() => window.harness[method](...args)).then(
  (value) => done({ value }), (error) => done({ harnessError: String((error && error.stack) || error) }));
"""

    def __init__(self, driver, gateway, keys):
        self.driver, self.gateway, self.keys = driver, gateway, keys

    def open(self, origin):
        self.origin = origin
        self.driver.get(origin + "/")
        deadline = time.monotonic() + 20
        while not self.driver.execute_script("return window.harnessReady === true"):
            assert time.monotonic() < deadline, "the test page did not load its module within 20 s"
            time.sleep(0.05)
        self.driver.get_log("browser")        # start each page with an empty console
        self.driver.get_log("performance")
        return self

    def run(self, method, *args):
        result = self.driver.execute_async_script(self.SCRIPT, method, list(args))
        assert "harnessError" not in result, result["harnessError"]
        return result["value"]

    def make(self, name, provider=PROVIDER, role="consumer", **config):
        return self.run("make", name, {"baseUrl": self.gateway.url, "providerId": provider, "role": role, **config})

    def call(self, name, service_type, **context):
        return self.run("call", name, service_type, context)

    def requests(self):
        return self.run("requests")

    def sessions(self, *tokens):
        return self.run("setSessions", list(tokens))

    def console(self):
        return [entry["message"] for entry in self.driver.get_log("browser")]

    def network_events(self):
        """The DevTools Network events Chromium logged since the last call (method, params)."""
        events = []
        for entry in self.driver.get_log("performance"):
            message = json.loads(entry["message"])["message"]
            if message.get("method", "").startswith("Network."):
                events.append((message["method"], message.get("params", {})))
        return events


@pytest.fixture(scope="session")
def artifacts():
    directory = os.environ.get("BROWSER_ARTIFACTS") or tempfile.mkdtemp(prefix="tokengate-browser-")
    os.makedirs(directory, exist_ok=True)
    _RUN["artifacts"] = directory
    return Path(directory)


@pytest.fixture(scope="session")
def keys(tmp_path_factory):
    instance = Keys(tmp_path_factory.mktemp("gateway") / "keys")
    yield instance
    shutil.rmtree(instance.directory, ignore_errors=True)        # no private key outlives the run


@pytest.fixture(scope="session")
def origins():
    allowed, other = PageServer(), PageServer()
    yield {"allowed": allowed.origin, "other": other.origin, "servers": {"allowed": allowed, "other": other}}
    allowed.close()
    other.close()


@pytest.fixture(scope="session")
def gateway(keys, origins, artifacts):
    started = time.monotonic()
    instance = Gateway(gateway_binary(), keys.directory.parent, keys, origins["allowed"])
    try:
        instance.wait_started()
        _RUN["gateway_start_seconds"] = time.monotonic() - started
        yield instance
    finally:
        instance.stop()
    for path in (instance.log_path, instance.audit_path, instance.config_path):   # no key in any of them
        if path.exists():
            shutil.copy(path, Path(artifacts) / ("gateway-" + path.name))


@pytest.fixture(scope="session")
def driver(artifacts, tmp_path_factory):
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    chromium = _which("CHROMIUM_BINARY", "chromium", "chromium-browser", "google-chrome")
    chromedriver = _which("CHROMEDRIVER", "chromedriver")
    if not chromium or not chromedriver:
        pytest.fail("the browser tests need Chromium and its driver: apt-get install chromium chromium-driver "
                    "(or set CHROMIUM_BINARY and CHROMEDRIVER)")
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu",
                     "--no-proxy-server", "--no-first-run", "--disable-extensions", "--window-size=1200,1000",
                     "--user-data-dir=%s" % tmp_path_factory.mktemp("chromium-profile")):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    options.add_experimental_option("perfLoggingPrefs", {"enableNetwork": True, "enablePage": False})
    started = time.monotonic()
    service = Service(executable_path=chromedriver, log_output=str(Path(artifacts) / "chromedriver.log"))
    browser = webdriver.Chrome(service=service, options=options)
    _RUN["browser_start_seconds"] = time.monotonic() - started
    _RUN["chromium"] = "Chromium %s" % browser.capabilities.get("browserVersion")
    browser.set_script_timeout(60)
    browser.set_page_load_timeout(30)
    (Path(artifacts) / "versions.txt").write_text(_RUN["chromium"] + "\n")
    yield browser
    browser.quit()


@pytest.fixture
def page(request, driver, gateway, keys, origins, artifacts):
    """The test page from the listed origin, with a fresh harness; a screenshot of it is kept after the test."""
    instance = Page(driver, gateway, keys).open(origins["allowed"])
    yield instance
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)
    driver.save_screenshot(str(Path(artifacts) / ("%s.png" % name)))


def pytest_configure(config):
    config.addinivalue_line("markers", "fleet_engine_ids: needs a gateway that accepts every legal Fleet Engine ID "
                                       "(issue 47); deselect with -m 'not fleet_engine_ids'")
    # A SIGTERM (scripts/test's timeout) ends the run like Ctrl-C, so the fixtures still stop the gateway, the page
    # servers and Chromium.
    def interrupt(signum, frame):
        raise KeyboardInterrupt("SIGTERM")
    signal.signal(signal.SIGTERM, interrupt)


def pytest_terminal_summary(terminalreporter):
    if "artifacts" in _RUN:
        terminalreporter.write_line("browser tests: %s; screenshots in %s" % (
            _RUN.get("chromium", "no browser started"), _RUN["artifacts"]))
    if "test_browser_ids" in sys.modules:
        from fleet_engine_ids import SEED
        ids = sys.modules["test_browser_ids"]
        terminalreporter.write_line("browser tests: Fleet Engine IDs drawn with seed %d (TOKENGATE_ID_SEED): %d legal, "
                                    "%d illegal" % (SEED, len(ids.LEGAL), len(ids.ILLEGAL)))
    if "browser_start_seconds" in _RUN or "gateway_start_seconds" in _RUN:
        terminalreporter.write_line("browser tests: Chromium started in %.1f s, the gateway in %.1f s" % (
            _RUN.get("browser_start_seconds", 0), _RUN.get("gateway_start_seconds", 0)))
