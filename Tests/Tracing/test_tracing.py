"""OpenTelemetry tracing, end to end: the real gateway exporting to a real OTLP/HTTP receiver.

  * the receiver: a Python http.server on 127.0.0.1 taking `POST /v1/traces` (protobuf, gzip or not), decoded
    with the OpenTelemetry project's own `opentelemetry-proto` classes;
  * the upstream: a token server on 127.0.0.1 (the gateway's upstream-http backend) signing RS256 Fleet Engine
    tokens with a key made here (Python's cryptography) and publishing it as a JWKS; it records every request's
    `traceparent`;
  * the gateway: the binary in TOKENGATE_BINARY (default `$(swift build --show-bin-path)/tokengate`), `serve`
    with a `tracing:` section pointing at the receiver (and, in one test, without it).

What is checked is what an operator reads in their tracing backend: one trace per request that continues the
caller's `traceparent`, the gateway's steps as children of its server span, the upstream call as the child of
the backend step with the same IDs the upstream received, the provider and token type on every step, errors by
their code and the callers' fixed sentence, the caller's sampling decision followed, spans flushed at shutdown, and no token or credential in
anything exported. Every wait is bounded; every process and server is stopped at the end.
"""

import base64
import gzip
import hashlib
import http.server
import json
import os
import re
import secrets
import signal
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2
from opentelemetry.proto.trace.v1 import trace_pb2

REPO = Path(__file__).resolve().parents[2]
PROVIDER = "trace-fleet"
SIGNER = "token-server@trace-fleet.iam.gserviceaccount.com"
SERVICE_NAME = "tokengate-under-test"
COLLECTOR_HEADER = ("x-collector-key", "collector-" + secrets.token_hex(8))
# A key in the upstream URL's query, as some token servers take one: a URL's query never reaches a span.
UPSTREAM_KEY = "upstream-key-" + secrets.token_hex(8)
WAIT = 15


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def fetch(url, headers=None, timeout=10):
    """(status, headers, body bytes), errors included; never through a proxy."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(urllib.request.Request(url, headers=headers or {}), timeout=timeout) as response:
            return response.status, response.headers, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers, error.read()


def eventually(condition, what, timeout=WAIT):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(0.05)
    pytest.fail("not within %d s: %s" % (timeout, what))


class Server:
    """A ThreadingHTTPServer on 127.0.0.1:0 with `handler`, served from a daemon thread until `stop()`."""

    def __init__(self, handler):
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.owner = self
        self.url = "http://127.0.0.1:%d" % self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class Quiet(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def answer(self, status, body, content_type):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Receiver:
    """An OTLP/HTTP traces receiver: every export's raw body, headers and decoded spans."""

    def __init__(self):
        self.lock = threading.Lock()
        self.bodies, self.headers, self.spans = [], [], []
        receiver = self

        class Handler(Quiet):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                if self.path != "/v1/traces" or self.headers.get("Content-Type") != "application/x-protobuf":
                    return self.answer(404, b"", "text/plain")
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                request = trace_service_pb2.ExportTraceServiceRequest()
                request.ParseFromString(body)
                with receiver.lock:
                    receiver.bodies.append(body)
                    receiver.headers.append({k.lower(): v for k, v in self.headers.items()})
                    for resource_spans in request.resource_spans:
                        resource = attributes(resource_spans.resource.attributes)
                        for scope_spans in resource_spans.scope_spans:
                            for span in scope_spans.spans:
                                receiver.spans.append((resource, span))
                self.answer(200, trace_service_pb2.ExportTraceServiceResponse().SerializeToString(),
                            "application/x-protobuf")

        self.server = Server(Handler)
        self.url = self.server.url + "/v1/traces"

    def trace(self, trace_id):
        """[(resource attributes, span)] of one trace (hex ID), so far."""
        with self.lock:
            return [(r, s) for r, s in self.spans if s.trace_id.hex() == trace_id]

    def exported(self):
        with self.lock:
            return b"".join(self.bodies), list(self.headers)


class Upstream:
    """The tenant's token server: `GET /token?trip=ID` answers `{"token": …}`, `GET /jwks` its public key."""

    def __init__(self):
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.kid = "trace-" + secrets.token_hex(6)
        self.lock = threading.Lock()
        self.requests = []
        self.tokens = []
        upstream = self
        numbers = self.key.public_key().public_numbers()
        jwks = json.dumps({"keys": [{
            "kty": "RSA", "alg": "RS256", "use": "sig", "kid": self.kid,
            "n": b64url(numbers.n.to_bytes(256, "big")), "e": b64url(numbers.e.to_bytes(3, "big")),
        }]}).encode()

        class Handler(Quiet):
            def do_GET(self):
                url = urllib.parse.urlsplit(self.path)
                if url.path == "/jwks":
                    return self.answer(200, jwks, "application/json")
                trip = urllib.parse.parse_qs(url.query).get("trip", [""])[0]
                with upstream.lock:
                    upstream.requests.append({"trip": trip, "traceparent": self.headers.get("traceparent")})
                token = upstream.sign(trip)
                with upstream.lock:
                    upstream.tokens.append(token)
                self.answer(200, json.dumps({"token": token}).encode(), "application/json")

        self.server = Server(Handler)

    def sign(self, trip):
        now = int(time.time())
        header = {"alg": "RS256", "typ": "JWT", "kid": self.kid}
        claims = {"iss": SIGNER, "sub": SIGNER, "aud": "https://fleetengine.googleapis.com/", "iat": now,
                  "exp": now + 3600, "authorization": {"tripid": trip}}
        signing_input = "%s.%s" % (b64url(json.dumps(header).encode()), b64url(json.dumps(claims).encode()))
        signature = self.key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
        return signing_input + "." + b64url(signature)

    def traceparents(self, trip):
        with self.lock:
            return [r["traceparent"] for r in self.requests if r["trip"] == trip]


def attributes(pairs):
    """{key: value} of OTLP KeyValues (strings, ints, bools, doubles)."""
    result = {}
    for pair in pairs:
        kind = pair.value.WhichOneof("value")
        result[pair.key] = getattr(pair.value, kind) if kind else None
    return result


def gateway_binary():
    binary = os.environ.get("TOKENGATE_BINARY")
    if not binary:
        bin_path = subprocess.run(["swift", "build", "--show-bin-path"], cwd=REPO, capture_output=True, text=True,
                                  timeout=120, check=True).stdout.strip()
        binary = os.path.join(bin_path, "tokengate")
    if not os.access(binary, os.X_OK):
        pytest.fail("no tokengate binary at %s: build it (swift build) or set TOKENGATE_BINARY" % binary)
    return binary


class Gateway:
    """`tokengate serve` on 127.0.0.1:0 with one upstream-http provider and, given a receiver, `tracing:`."""

    def __init__(self, directory, upstream, receiver=None, schedule_delay_ms=100, sample_ratio=None, fast_path=True):
        self.api_key = "tg_trace_" + secrets.token_hex(16)
        tracing = ""
        if receiver:
            tracing = """tracing:
  otlp:
    endpoint: %s
    headers: { %s: "%s" }
    timeout: 5s
  serviceName: %s
""" % (receiver.url, COLLECTOR_HEADER[0], COLLECTOR_HEADER[1], SERVICE_NAME)
            if sample_ratio is not None:
                tracing += "  sampleRatio: %s\n" % sample_ratio
        config = """server:
  host: 127.0.0.1
  port: 0
  admin: { host: 127.0.0.1, port: 0 }
  fastPath: %(fast_path)s
%(tracing)sproviders:
  %(provider)s:
    backend:
      type: upstream-http
      url: %(upstream)s/token?trip={tripId}&key=%(upstream_key)s
      tokenTypes: [consumer]
      verify:
        - jwksUrl: %(upstream)s/jwks
          serviceAccount: %(signer)s
    clients:
      - name: rides-backend
        type: api-key
        keySha256: %(digest)s
        allow: { consumer: any }
""" % {"tracing": tracing, "provider": PROVIDER, "upstream": upstream.server.url, "signer": SIGNER,
       "digest": hashlib.sha256(self.api_key.encode()).hexdigest(), "upstream_key": UPSTREAM_KEY,
       "fast_path": "true" if fast_path else "false"}
        self.directory = Path(tempfile.mkdtemp(prefix="gateway-", dir=directory))
        (self.directory / "config.yaml").write_text(config)
        self.log_path = self.directory / "gateway.log"
        self.log = open(self.log_path, "wb")
        environment = dict(os.environ, OTEL_BSP_SCHEDULE_DELAY=str(schedule_delay_ms))
        self.process = subprocess.Popen(
            [gateway_binary(), "serve", "--config", "config.yaml"], cwd=self.directory, env=environment,
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        self.url = eventually(self._listening, "the gateway says it listens\n" + self.log_text())
        eventually(lambda: self._ready(), "/readyz answers 200\n" + self.log_text())

    def _listening(self):
        if self.process.poll() is not None:
            pytest.fail("the gateway exited with %s:\n%s" % (self.process.returncode, self.log_text()))
        text = self.log_text()
        public = re.search(r"^tokengate listening on (http://127\.0\.0\.1:\d+)", text, re.M)
        admin = re.search(r"^tokengate admin listening on (http://127\.0\.0\.1:\d+)", text, re.M)
        if public and admin:
            self.admin_url = admin.group(1)
            return public.group(1)
        return None

    def _ready(self):
        try:
            return fetch(self.admin_url + "/readyz", timeout=2)[0] == 200
        except OSError:
            return False

    def log_text(self):
        return self.log_path.read_text(errors="replace")

    def token(self, trip, traceparent=None, api_key=None, extra=None):
        headers = dict(extra or {}, Authorization="Bearer " + (api_key or self.api_key))
        if traceparent:
            headers["traceparent"] = traceparent
        return fetch("%s/v1/providers/%s/tokens/consumer?tripId=%s" % (self.url, PROVIDER, trip), headers)

    def stop(self):
        """SIGTERM (graceful shutdown), then SIGKILL if it lingers; the exit status."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=10)
        self.log.close()
        return self.process.returncode


@pytest.fixture
def world(tmp_path):
    receiver, upstream, gateways = Receiver(), Upstream(), []

    def start(**options):
        gateway = Gateway(tmp_path, upstream, **options)
        gateways.append(gateway)
        return gateway

    yield receiver, upstream, start
    for gateway in gateways:
        gateway.stop()
    upstream.server.stop()
    receiver.server.stop()


def new_ids():
    return secrets.token_hex(16), secrets.token_hex(8)


def by_name(spans):
    named = {}
    for _, span in spans:
        named.setdefault(span.name, []).append(span)
    return named


def only(named, name):
    assert len(named.get(name, [])) == 1, "one %s span expected: %s" % (name, sorted(named))
    return named[name][0]


def assert_nothing_secret_exported(receiver, gateway, upstream):
    raw, _ = receiver.exported()
    assert raw, "nothing was exported"
    secrets_seen = [gateway.api_key, hashlib.sha256(gateway.api_key.encode()).hexdigest(), "Bearer", UPSTREAM_KEY]
    for token in upstream.tokens:
        secrets_seen += [token, token.split(".")[2]]
    for secret in secrets_seen:
        assert secret.encode() not in raw, "an export holds a secret (%s…)" % secret[:12]
    with receiver.lock:
        for _, span in receiver.spans:
            tags = attributes(span.attributes)
            assert "url.query" not in tags and "?" not in tags.get("url.full", ""), (span.name, tags)


def test_a_minted_token_is_one_trace_continuing_the_callers(world):
    receiver, upstream, start = world
    gateway = start(receiver=receiver)
    trace_id, caller_span = new_ids()
    status, _, body = gateway.token("trip-1", "00-%s-%s-01" % (trace_id, caller_span))
    assert status == 200, body

    # The upstream was called inside the same trace, by a span of the gateway's.
    [sent] = upstream.traceparents("trip-1")
    assert sent is not None, "the upstream got no traceparent"
    version, sent_trace, sent_parent, flags = sent.split("-")
    assert (version, sent_trace, flags) == ("00", trace_id, "01")
    assert sent_parent != caller_span

    wanted = {"tokengate.authenticate", "tokengate.cache", "tokengate.backend", "tokengate.verify"}
    spans = eventually(lambda: (lambda s: s if wanted <= set(by_name(s)) and len(s) >= 6 else None)(
        receiver.trace(trace_id)), "the request's spans reach the receiver")
    named = by_name(spans)
    server = [s for _, s in spans if s.kind == trace_pb2.Span.SPAN_KIND_SERVER]
    client = [s for _, s in spans if s.kind == trace_pb2.Span.SPAN_KIND_CLIENT]
    assert len(server) == 1 and len(client) == 1, [(s.name, s.kind) for _, s in spans]
    server, client = server[0], client[0]
    authenticate, cache, backend, verify = (only(named, n) for n in (
        "tokengate.authenticate", "tokengate.cache", "tokengate.backend", "tokengate.verify"))

    # The tree an operator sees: caller → server span → steps; backend → the upstream call.
    assert server.parent_span_id.hex() == caller_span
    assert authenticate.parent_span_id == server.span_id
    assert cache.parent_span_id == server.span_id
    assert backend.parent_span_id == cache.span_id
    assert verify.parent_span_id == cache.span_id
    assert client.parent_span_id == backend.span_id
    assert client.span_id.hex() == sent_parent, "the upstream's traceparent names the client span"
    assert server.name == "GET /v1/providers/{providerId}/tokens/{tokenType}", server.name
    assert attributes(server.attributes) == {
        "http.request.method": "GET", "url.path": "/v1/providers/%s/tokens/consumer" % PROVIDER,
        "http.route": "/v1/providers/{providerId}/tokens/{tokenType}", "http.response.status_code": 200}

    for span in (authenticate, cache, backend, verify):
        tags = attributes(span.attributes)
        assert tags["tokengate.provider"] == PROVIDER and tags["tokengate.token_type"] == "consumer", tags
        assert span.status.code != trace_pb2.Status.STATUS_CODE_ERROR
    assert attributes(cache.attributes)["tokengate.cache.outcome"] == "miss"
    assert attributes(backend.attributes)["tokengate.backend"] == "upstream-http"
    assert all(resource.get("service.name") == SERVICE_NAME for resource, _ in spans)

    _, headers = receiver.exported()
    assert all(h.get(COLLECTOR_HEADER[0]) == COLLECTOR_HEADER[1] for h in headers), "the configured header is sent"
    assert_nothing_secret_exported(receiver, gateway, upstream)


def test_hits_refusals_and_new_traces(world):
    receiver, upstream, start = world
    gateway = start(receiver=receiver)
    assert gateway.token("trip-2")[0] == 200

    # A cached hit: authentication and the cache, no backend call; no traceparent, so a new root trace.
    status, _, _ = gateway.token("trip-2")
    assert status == 200
    def hit_trace():
        for _, span in list(receiver.spans):
            tags = attributes(span.attributes)
            if span.name == "tokengate.cache" and tags.get("tokengate.cache.outcome") == "hit":
                return span.trace_id.hex()
        return None
    hit = eventually(hit_trace, "a cache span with outcome hit")
    spans = eventually(lambda: (lambda s: s if len(s) >= 3 else None)(receiver.trace(hit)), "the hit's trace")
    named = by_name(spans)
    assert "tokengate.backend" not in named and "tokengate.verify" not in named, sorted(named)
    [server] = [s for _, s in spans if s.kind == trace_pb2.Span.SPAN_KIND_SERVER]
    assert server.parent_span_id == b"", "a request without traceparent starts a trace"
    assert len(upstream.traceparents("trip-2")) == 1

    # A wrong credential: the authentication step fails with the code, and nothing after it runs.
    trace_id, caller_span = new_ids()
    status, _, body = gateway.token("trip-2", "00-%s-%s-01" % (trace_id, caller_span), api_key="tg_wrong_key")
    assert status == 401 and json.loads(body)["error"]["code"] == "unauthenticated", body
    spans = eventually(lambda: (lambda s: s if len(s) >= 2 else None)(receiver.trace(trace_id)), "the refusal's trace")
    named = by_name(spans)
    authenticate = only(named, "tokengate.authenticate")
    assert authenticate.status.code == trace_pb2.Status.STATUS_CODE_ERROR
    assert attributes(authenticate.attributes)["tokengate.error.code"] == "unauthenticated"
    assert "tokengate.cache" not in named
    # The server span has the status; any error it records is as callers see it: the code and its fixed sentence.
    [server] = [s for _, s in spans if s.kind == trace_pb2.Span.SPAN_KIND_SERVER]
    assert attributes(server.attributes)["http.response.status_code"] == 401
    messages = [attributes(e.attributes).get("exception.message") for e in server.events]
    assert set(messages) <= {"unauthenticated: a valid credential for this provider is required"}, messages
    assert_nothing_secret_exported(receiver, gateway, upstream)
    assert b"tg_wrong_key" not in receiver.exported()[0]


def test_the_callers_sampling_decision_is_followed(world):
    receiver, upstream, start = world
    gateway = start(receiver=receiver)
    unsampled, caller_span = new_ids()
    assert gateway.token("trip-3", "00-%s-%s-00" % (unsampled, caller_span))[0] == 200
    [sent] = upstream.traceparents("trip-3")
    assert sent.startswith("00-%s-" % unsampled) and sent.endswith("-00"), sent

    # A sampled request after it: once its spans arrive, the unsampled one's would have too (one exporter, in order).
    sampled, caller_span = new_ids()
    assert gateway.token("trip-4", "00-%s-%s-01" % (sampled, caller_span))[0] == 200
    eventually(lambda: len(receiver.trace(sampled)) >= 6, "the sampled request's spans")
    assert receiver.trace(unsampled) == []


@pytest.mark.parametrize("fast_path", [True, False])
def test_only_sampled_requests_are_recorded(world, fast_path):
    """The decision is made once, first: a caller's flag, else the ratio (0 here). An unsampled request, hit or miss,
    exports nothing and still hands the caller's traceparent on; a sampled one exports its whole trace. A client
    cannot make its request sampled with the header the event loop's handler tells the router its decision in."""
    receiver, upstream, start = world
    gateway = start(receiver=receiver, sample_ratio=0, fast_path=fast_path)
    unsampled = []
    for trip in ("trip-7", "trip-7", "trip-8"):
        trace_id, caller_span = new_ids()
        unsampled.append(trace_id)
        assert gateway.token(trip, "00-%s-%s-00" % (trace_id, caller_span))[0] == 200
    # The miss of trip-8 called the upstream with the caller's own traceparent: no span was made in between.
    assert upstream.traceparents("trip-8") == ["00-%s-%s-00" % (unsampled[2], caller_span)]
    for trip in ("trip-9", "trip-9"):  # roots at ratio 0: a miss and a hit, one of them claiming a decision
        assert gateway.token(trip, extra={"TokenGate-Trace-Sampled": "1"})[0] == 200
    assert upstream.traceparents("trip-9") == [None], "an unsampled root has no trace to hand on"

    # A sampled request after them, a miss then a hit: once its spans arrive, theirs would have (one exporter, in order).
    sampled, caller_span = new_ids()
    assert gateway.token("trip-10", "00-%s-%s-01" % (sampled, caller_span))[0] == 200
    hit, _ = new_ids()
    assert gateway.token("trip-10", "00-%s-%s-01" % (hit, caller_span))[0] == 200
    eventually(lambda: len(receiver.trace(sampled)) >= 6 and len(receiver.trace(hit)) >= 3, "the sampled requests' spans")
    named = by_name(receiver.trace(hit))
    assert attributes(only(named, "tokengate.cache").attributes)["tokengate.cache.outcome"] == "hit"
    with receiver.lock:
        traces = {span.trace_id.hex() for _, span in receiver.spans}
    assert traces == {sampled, hit}, "only the sampled requests were exported"


def test_spans_are_flushed_at_shutdown(world):
    receiver, upstream, start = world
    # Batches leave every minute here: only the shutdown's flush can deliver these spans in time.
    gateway = start(receiver=receiver, schedule_delay_ms=60000)
    trace_id, caller_span = new_ids()
    assert gateway.token("trip-5", "00-%s-%s-01" % (trace_id, caller_span))[0] == 200
    time.sleep(0.5)
    assert receiver.trace(trace_id) == []
    assert gateway.stop() == 0, gateway.log_text()
    assert len(receiver.trace(trace_id)) >= 6, by_name(receiver.trace(trace_id))


def test_without_the_section_nothing_is_traced_or_propagated(world):
    receiver, upstream, start = world
    gateway = start()
    trace_id, caller_span = new_ids()
    assert gateway.token("trip-6", "00-%s-%s-01" % (trace_id, caller_span))[0] == 200
    assert upstream.traceparents("trip-6") == [None]
    assert gateway.stop() == 0
    assert receiver.exported()[0] == b""
    assert "tracing" not in gateway.log_text()
