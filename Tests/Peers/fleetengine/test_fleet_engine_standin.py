"""Proves fleet_engine_standin.py admits and refuses calls as Fleet Engine's documentation says it does.

Run: python3 -m pytest -q -p no:cacheprovider Tests/Peers/fleetengine   (stdlib, pytest and cryptography only)

The test plays the service accounts: it makes one RSA key per account with `cryptography`, publishes each
account's keys as a JWKS (one account as Google's x509 map) from a small loopback HTTP server of its own, registers
account -> JWKS URL and the account's roles per project with the stand-in's control API, seeds trips, vehicles,
delivery vehicles and tasks, and signs tokens of every type in the project's reference table
(/work/shared/reference/fleet-engine-tokens.md section 2). Each token type is then used for the calls it is meant
for (200, or 404 for an ID its claim names that does not exist) and for the neighbouring calls (401/403), and every
answer's verdict (the X-Standin-Verdict header, the same as in /_calls) is checked, so a refusal for the wrong
reason fails. Then the token checks one by one (alg, kid, iss/sub, signature, aud, iat/exp), the JWKS cache, the
live-acceptance probe's four cases (accepted; role removed; wrong project; expired as Fleet Engine sees it), keys
published by ../google/google_standin.py (its JWK and x509 endpoints, as gateway tests register them), and the
control API. Loopback only: an autouse guard fails any attempt of this process to connect elsewhere.
"""

import base64
import collections
import datetime
import hashlib
import hmac
import http.server
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.x509.oid import NameOID

HERE = os.path.dirname(os.path.abspath(__file__))
STANDIN = os.path.join(HERE, "fleet_engine_standin.py")
AUD = "https://fleetengine.googleapis.com/"
PROJECT = "acme-fleet"
OTHER = "other-fleet"
TIMEOUT = 10

ROLES = {
    "consumer": ["roles/fleetengine.consumerSdkUser"],
    "driver": ["roles/fleetengine.driverSdkUser"],
    "server": ["roles/fleetengine.ondemandAdmin"],
    "delivery-driver": ["roles/fleetengine.deliveryUntrustedDriver"],
    "trusted-driver": ["roles/fleetengine.deliveryTrustedDriver"],
    "delivery-consumer": ["roles/fleetengine.deliveryConsumer"],
    "delivery-fleet-reader": ["roles/fleetengine.deliveryFleetReader"],
    "fleet-reader": ["roles/fleetengine.viewer"],
    "batch": ["roles/fleetengine.deliveryTrustedDriver", "roles/fleetengine.deliveryFleetReader"],
    "rotating": ["roles/fleetengine.consumerSdkUser"],
}
# The claims each type carries as the gateway mints it (reference section 2; TokenContext.authorizationClaim).
CLAIMS = {
    "consumer": {"tripid": "T1"},
    "driver": {"vehicleid": "V1"},
    "server": {"tripid": "*", "vehicleid": "*"},
    "delivery-driver": {"deliveryvehicleid": "D1"},
    "trusted-driver": {"deliveryvehicleid": "D1", "taskid": "K1"},
    "delivery-consumer": {"trackingid": "TR1"},
    "delivery-fleet-reader": {"taskid": "*", "trackingid": "*", "deliveryvehicleid": "*"},
    "fleet-reader": {"tripid": "*", "vehicleid": "*", "taskid": "*", "trackingid": "*", "deliveryvehicleid": "*"},
    "batch": {"taskids": ["K1", "KB1", "KB2"]},
    "rotating": {"tripid": "T1"},
}
SEED = {
    "trips": {"T1": {"vehicleId": "V1"}, "T2": {"vehicleId": "V2"}},
    "vehicles": {"V1": {"vehicleType": {"category": "AUTO"}}, "V2": {"vehicleType": {"category": "AUTO"}}},
    "deliveryVehicles": {"D1": {}, "D2": {}},
    "tasks": {"K1": {"trackingId": "TR1", "deliveryVehicleId": "D1"},
              "K2": {"trackingId": "TR2", "deliveryVehicleId": "D2"}},
}
LOC = {"location": {"latitude": 52.52, "longitude": 13.405}}


def email(name):
    return "%s@acme-fleet.iam.gserviceaccount.com" % name


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def compact(obj) -> str:
    return b64url(json.dumps(obj, separators=(",", ":")).encode("utf-8"))


class Key:
    def __init__(self):
        self.private = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        der = self.private.public_key().public_bytes(serialization.Encoding.DER,
                                                     serialization.PublicFormat.SubjectPublicKeyInfo)
        self.kid = hashlib.sha1(der).hexdigest()

    def jwk(self):
        numbers = self.private.public_key().public_numbers()
        as_b64 = lambda v: b64url(v.to_bytes((v.bit_length() + 7) // 8, "big"))
        return {"kty": "RSA", "alg": "RS256", "use": "sig", "kid": self.kid, "n": as_b64(numbers.n),
                "e": as_b64(numbers.e)}

    def cert_pem(self, name):
        now = datetime.datetime.now(datetime.timezone.utc)
        subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name[:64])])
        cert = (x509.CertificateBuilder().subject_name(subject).issuer_name(subject)
                .public_key(self.private.public_key()).serial_number(x509.random_serial_number())
                .not_valid_before(now - datetime.timedelta(days=1)).not_valid_after(now + datetime.timedelta(days=30))
                .sign(self.private, hashes.SHA256()))
        return cert.public_bytes(serialization.Encoding.PEM).decode("ascii")

    def sign(self, data: bytes, digest=None) -> bytes:
        return self.private.sign(data, padding.PKCS1v15(), digest or hashes.SHA256())


def sign_jwt(key, claims, header=None):
    header = {"alg": "RS256", "typ": "JWT", "kid": key.kid} if header is None else header
    signing_input = compact(header) + "." + compact(claims)
    return signing_input + "." + b64url(key.sign(signing_input.encode("ascii")))


# --- loopback guard, JWKS server, stand-in -----------------------------------------------------------------

@pytest.fixture(autouse=True)
def loopback_only(monkeypatch):
    real_connect = socket.socket.connect

    def connect(self, address):
        if isinstance(address, tuple) and not (str(address[0]).startswith("127.") or address[0] in ("::1", "localhost")):
            raise OSError("test guard: refusing to connect to %r" % (address,))
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)


class JwksServer:
    """Serves self.docs[path] as JSON (404 otherwise) and counts hits per path."""

    def __init__(self):
        self.docs, self.hits = {}, collections.Counter()
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                outer.hits[self.path] += 1
                doc = outer.docs.get(self.path)
                data = json.dumps(doc).encode() if doc is not None else b"{}"
                self.send_response(200 if doc is not None else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base = "http://127.0.0.1:%d" % self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path):
        return self.base + path


class Answer:
    def __init__(self, status, body, verdict):
        self.status, self.body, self.verdict = status, body, verdict

    def __repr__(self):
        return "Answer(%d, %s, %s)" % (self.status, self.verdict, json.dumps(self.body)[:300])


class StandIn:
    def __init__(self, proc, port):
        self.proc, self.port = proc, port
        self.base = "http://127.0.0.1:%d" % port

    def http(self, method, url, body=None, headers=None):
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(url, data=data, method=method, headers=dict(headers or {}))
        if data is not None:
            request.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT) as response:
                return response.status, json.loads(response.read() or b"null"), response.headers
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null"), e.headers

    def control(self, **body):
        status, answer, _ = self.http("POST", self.base + "/_control", body)
        assert status == 200, answer
        return answer

    def calls(self):
        status, answer, _ = self.http("GET", self.base + "/_calls")
        assert status == 200
        return answer

    def call(self, method, path, token=None, body=None, project=PROJECT, bearer=None):
        headers = {}
        if bearer is not None:
            headers["Authorization"] = bearer
        elif token is not None:
            headers["Authorization"] = "Bearer " + token
        if body is None and method in ("POST", "PUT", "PATCH"):
            body = {}
        status, answer, response_headers = self.http(method, "%s/v1/providers/%s/%s" % (self.base, project, path),
                                                     body, headers)
        return Answer(status, answer, response_headers.get("X-Standin-Verdict"))


@pytest.fixture(scope="module")
def jwks():
    server = JwksServer()
    yield server
    server.server.shutdown()


@pytest.fixture(scope="module")
def standin(tmp_path_factory):
    log_dir = tmp_path_factory.mktemp("fleet-engine-standin")
    stderr = open(log_dir / "stderr.log", "wb")
    proc = subprocess.Popen([sys.executable, STANDIN, "--port", "0", "--max-seconds", "300", "--exit-on-stdin-eof"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr)
    line = {}
    reader = threading.Thread(target=lambda: line.update(text=proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(15)
    try:
        assert line.get("text"), "the stand-in printed no first line within 15 s"
        yield StandIn(proc, json.loads(line["text"])["port"])
    finally:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)
        stderr.close()
        errors = (log_dir / "stderr.log").read_text()
        assert "Traceback" not in errors, errors


class World:
    def __init__(self, standin, jwks):
        self.standin, self.jwks = standin, jwks
        self.keys = {name: Key() for name in ROLES}
        for name, key in self.keys.items():
            jwks.docs["/jwk/" + email(name)] = {"keys": [key.jwk()]}

    def register(self):
        self.standin.control(
            reset=["all"],
            accounts={email(n): {"jwksUrl": self.jwks.url("/jwk/" + email(n))} for n in ROLES},
            roles={PROJECT: {email(n): r for n, r in ROLES.items()}},
            **{kind: {PROJECT: items, OTHER: items} for kind, items in SEED.items()})

    def token(self, who, auth=None, *, lifetime=600, iat=None, exp=None, key=None, header=None, drop=(), **overrides):
        now = int(time.time())
        iat = now if iat is None else iat
        claims = {"iss": email(who), "sub": email(who), "aud": AUD, "iat": iat,
                  "exp": iat + lifetime if exp is None else exp,
                  "authorization": CLAIMS[who] if auth is None else auth}
        for name, value in overrides.items():
            if value is None:
                claims.pop(name, None)
            else:
                claims[name] = value
        for name in drop:
            claims.pop(name, None)
        return sign_jwt(key or self.keys[who], claims, header)


@pytest.fixture(scope="module")
def world(standin, jwks):
    w = World(standin, jwks)
    w.register()
    return w


def expect(answer, status, verdict):
    assert (answer.status, answer.verdict) == (status, verdict), answer
    if status >= 400 and verdict not in ("no_route",):
        names = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                 409: "ALREADY_EXISTS", 503: "UNAVAILABLE"}
        error = answer.body["error"]
        assert error["code"] == status and error["status"] == names[status] and error["message"], answer


# --- every token type: meant-for calls allowed, neighbours refused ------------------------------------------

def C(who, method, path, status, verdict, claims=None, body=None, project=PROJECT):
    return pytest.param(who, method, path, status, verdict, claims, body, project,
                        id="%s %s %s%s -> %d %s" % (who, method, path, "" if project == PROJECT else " @" + project,
                                                    status, verdict))


CASES = [
    # consumer (rider): {"tripid": T1}, Consumer SDK User
    C("consumer", "GET", "trips/T1", 200, "ok"),
    C("consumer", "GET", "trips/T2", 403, "claim"),
    C("consumer", "GET", "trips/T-probe", 404, "not_found", claims={"tripid": "T-probe"}),
    C("consumer", "GET", "vehicles/V1", 200, "ok"),                       # the vehicle of its trip
    C("consumer", "GET", "vehicles/V2", 403, "claim"),
    C("consumer", "POST", "vehicles:search", 200, "ok", body={"pickupRadiusMeters": 400}),
    C("consumer", "PUT", "trips/T1?updateMask=tripStatus", 403, "role", body={"tripStatus": "CANCELED"}),
    C("consumer", "PUT", "vehicles/V1?updateMask=lastLocation", 403, "role", body={"lastLocation": LOC}),
    C("consumer", "POST", "trips?tripId=T-c", 403, "role"),
    C("consumer", "GET", "deliveryVehicles/D1", 403, "role"),
    C("consumer", "GET", "taskTrackingInfo/TR1", 403, "role"),
    C("consumer", "GET", "trips/T1", 403, "role", project=OTHER),
    # driver: {"vehicleid": V1}, Driver SDK User
    C("driver", "GET", "vehicles/V1", 200, "ok"),
    C("driver", "GET", "vehicles/V2", 403, "claim"),
    C("driver", "PUT", "vehicles/V1?updateMask=lastLocation", 200, "ok", body={"lastLocation": LOC}),
    C("driver", "PUT", "vehicles/V1?updateMask=last_location,vehicle_state", 200, "ok",
      body={"lastLocation": LOC, "vehicleState": "ONLINE"}),
    C("driver", "PUT", "vehicles/V1:updateLocation", 200, "ok", body={"currentLocation": LOC}),
    C("driver", "PUT", "vehicles/V2?updateMask=lastLocation", 403, "claim", body={"lastLocation": LOC}),
    C("driver", "PUT", "vehicles/V1?updateMask=vehicleType", 403, "role", body={"vehicleType": {"category": "TAXI"}}),
    C("driver", "PUT", "vehicles/V-gone?updateMask=lastLocation", 404, "not_found", claims={"vehicleid": "V-gone"},
      body={"lastLocation": LOC}),
    C("driver", "GET", "trips/T1", 200, "ok"),                            # a trip of its vehicle
    C("driver", "GET", "trips/T2", 403, "claim"),
    C("driver", "PUT", "trips/T1?updateMask=tripStatus", 200, "ok", body={"tripStatus": "ENROUTE_TO_PICKUP"}),
    C("driver", "PUT", "trips/T2?updateMask=tripStatus", 403, "claim", body={"tripStatus": "ENROUTE_TO_PICKUP"}),
    C("driver", "POST", "trips:search", 200, "ok", body={"vehicleId": "V1"}),
    C("driver", "POST", "trips:search", 403, "claim", body={"vehicleId": "V2"}),
    C("driver", "POST", "trips?tripId=T-d", 403, "role"),
    C("driver", "GET", "vehicles", 403, "role"),
    C("driver", "POST", "vehicles?vehicleId=V-d", 403, "role"),
    C("driver", "PATCH", "deliveryVehicles/D1?updateMask=lastLocation", 403, "role", body={"lastLocation": LOC}),
    C("driver", "PUT", "vehicles/V1?updateMask=lastLocation", 403, "role", body={"lastLocation": LOC}, project=OTHER),
    # server: {"tripid": "*", "vehicleid": "*"}, On-demand Admin (claims ignored)
    C("server", "GET", "trips/T2", 200, "ok"),
    C("server", "GET", "trips/T-none", 404, "not_found"),
    C("server", "POST", "trips?tripId=T-s", 200, "ok", body={"tripType": "EXCLUSIVE", "pickupPoint": {"point": LOC}}),
    C("server", "POST", "trips?tripId=T1", 409, "exists", body={"tripType": "EXCLUSIVE"}),
    C("server", "POST", "trips", 400, "bad_request", body={"tripType": "EXCLUSIVE"}),
    C("server", "PUT", "trips/T2?updateMask=vehicleId", 200, "ok", body={"vehicleId": "V2"}),
    C("server", "PUT", "trips/T2", 400, "bad_request", body={"vehicleId": "V2"}),
    C("server", "POST", "vehicles?vehicleId=V-s", 200, "ok", body={"vehicleState": "OFFLINE"}),
    C("server", "PUT", "vehicles/V2?updateMask=vehicleType", 200, "ok", body={"vehicleType": {"category": "TAXI"}}),
    C("server", "GET", "vehicles", 200, "ok"),
    C("server", "GET", "trips/T2", 200, "ok", claims={}),
    C("server", "GET", "trips/T2", 200, "ok", claims={"tripid": "T1"}),
    C("server", "GET", "deliveryVehicles/D1", 403, "role"),
    C("server", "GET", "tasks/K1", 403, "role"),
    C("server", "GET", "trips/T1", 403, "role", project=OTHER),
    # delivery driver (untrusted): {"deliveryvehicleid": D1}, Delivery Untrusted Driver User
    C("delivery-driver", "GET", "deliveryVehicles/D1", 200, "ok"),
    C("delivery-driver", "GET", "deliveryVehicles/D2", 403, "claim"),
    C("delivery-driver", "PATCH", "deliveryVehicles/D1?updateMask=lastLocation", 200, "ok", body={"lastLocation": LOC}),
    C("delivery-driver", "PATCH", "deliveryVehicles/D2?updateMask=lastLocation", 403, "claim",
      body={"lastLocation": LOC}),
    C("delivery-driver", "PATCH", "deliveryVehicles/D1?updateMask=remainingVehicleJourneySegments", 403, "role",
      body={"remainingVehicleJourneySegments": []}),
    C("delivery-driver", "POST", "deliveryVehicles?deliveryVehicleId=D-u", 403, "role"),
    C("delivery-driver", "GET", "deliveryVehicles/D-none", 404, "not_found", claims={"deliveryvehicleid": "D-none"}),
    C("delivery-driver", "GET", "tasks/K1", 403, "role"),
    C("delivery-driver", "PATCH", "tasks/K1?updateMask=taskOutcome", 403, "role", body={"taskOutcome": "SUCCEEDED"}),
    C("delivery-driver", "GET", "vehicles/V1", 403, "role"),
    # trusted delivery driver: {"deliveryvehicleid": D1, "taskid": K1 | "*"}, Delivery Trusted Driver User
    C("trusted-driver", "PATCH", "deliveryVehicles/D1?updateMask=remainingVehicleJourneySegments", 200, "ok",
      body={"remainingVehicleJourneySegments": [{"stop": {"tasks": [{"taskId": "K1"}]}}]}),
    C("trusted-driver", "PATCH", "deliveryVehicles/D1?updateMask=last_location,remaining_vehicle_journey_segments",
      200, "ok", body={"lastLocation": LOC, "remainingVehicleJourneySegments": []}),
    C("trusted-driver", "PATCH", "deliveryVehicles/D2?updateMask=lastLocation", 403, "claim",
      body={"lastLocation": LOC}),
    C("trusted-driver", "PATCH", "tasks/K1?updateMask=taskOutcome", 200, "ok", body={"taskOutcome": "SUCCEEDED"}),
    C("trusted-driver", "PATCH", "tasks/K2?updateMask=taskOutcome", 403, "claim", body={"taskOutcome": "SUCCEEDED"}),
    C("trusted-driver", "PATCH", "tasks/K2?updateMask=taskOutcome", 200, "ok",
      claims={"deliveryvehicleid": "D1", "taskid": "*"}, body={"taskOutcome": "SUCCEEDED"}),
    C("trusted-driver", "POST", "deliveryVehicles?deliveryVehicleId=D-t", 403, "claim"),
    C("trusted-driver", "POST", "deliveryVehicles?deliveryVehicleId=D-t", 200, "ok",
      claims={"deliveryvehicleid": "D-t", "taskid": "*"}),
    C("trusted-driver", "POST", "tasks?taskId=K-t", 403, "claim", body={"type": "PICKUP", "state": "OPEN"}),
    C("trusted-driver", "POST", "tasks?taskId=K-t", 200, "ok", claims={"deliveryvehicleid": "D1", "taskid": "*"},
      body={"type": "PICKUP", "state": "OPEN", "trackingId": "TR-t"}),
    C("trusted-driver", "GET", "tasks/K1", 403, "role"),                  # [IAM]: no tasks.get
    C("trusted-driver", "GET", "deliveryVehicles", 403, "role"),
    C("trusted-driver", "GET", "taskTrackingInfo/TR1", 403, "role"),
    # delivery consumer: {"trackingid": TR1} or {"taskid": K1}, Delivery Consumer
    C("delivery-consumer", "GET", "taskTrackingInfo/TR1", 200, "ok"),
    C("delivery-consumer", "GET", "taskTrackingInfo/TR2", 403, "claim"),
    C("delivery-consumer", "GET", "taskTrackingInfo/TR-none", 404, "not_found", claims={"trackingid": "TR-none"}),
    C("delivery-consumer", "GET", "taskTrackingInfo/TR1", 200, "ok", claims={"taskid": "K1"}),
    C("delivery-consumer", "GET", "taskTrackingInfo/TR2", 403, "claim", claims={"taskid": "K1"}),
    C("delivery-consumer", "GET", "tasks/K1", 403, "role"),
    C("delivery-consumer", "PATCH", "tasks/K1?updateMask=state", 403, "role", body={"state": "CLOSED"}),
    C("delivery-consumer", "GET", "deliveryVehicles/D1", 403, "role"),
    C("delivery-consumer", "GET", "trips/T1", 403, "role"),
    # delivery fleet reader: taskid, trackingid, deliveryvehicleid "*", Delivery Fleet Reader
    C("delivery-fleet-reader", "GET", "tasks/K2", 200, "ok"),
    C("delivery-fleet-reader", "GET", "tasks", 200, "ok"),
    C("delivery-fleet-reader", "GET", "deliveryVehicles", 200, "ok"),
    C("delivery-fleet-reader", "GET", "deliveryVehicles/D2", 200, "ok"),
    C("delivery-fleet-reader", "GET", "taskTrackingInfo/TR2", 200, "ok"),
    C("delivery-fleet-reader", "GET", "tasks/K-none", 404, "not_found"),
    C("delivery-fleet-reader", "PATCH", "tasks/K1?updateMask=state", 403, "role", body={"state": "CLOSED"}),
    C("delivery-fleet-reader", "PATCH", "deliveryVehicles/D1?updateMask=lastLocation", 403, "role",
      body={"lastLocation": LOC}),
    C("delivery-fleet-reader", "POST", "tasks?taskId=K-r", 403, "role"),
    C("delivery-fleet-reader", "GET", "trips/T1", 403, "role"),
    C("delivery-fleet-reader", "GET", "deliveryVehicles/D2", 403, "claim", claims={"deliveryvehicleid": "D1"}),
    # unified fleet reader: every ID claim "*", Fleet Engine Viewer
    C("fleet-reader", "GET", "trips/T2", 200, "ok"),
    C("fleet-reader", "GET", "vehicles/V2", 200, "ok"),
    C("fleet-reader", "GET", "vehicles", 200, "ok"),
    C("fleet-reader", "POST", "trips:search", 200, "ok", body={"vehicleId": "V2"}),
    C("fleet-reader", "GET", "deliveryVehicles", 200, "ok"),
    C("fleet-reader", "GET", "tasks/K1", 200, "ok"),
    C("fleet-reader", "GET", "taskTrackingInfo/TR1", 200, "ok"),
    C("fleet-reader", "GET", "trips/T-none", 404, "not_found"),
    C("fleet-reader", "PUT", "trips/T1?updateMask=tripStatus", 403, "role", body={"tripStatus": "CANCELED"}),
    C("fleet-reader", "PUT", "vehicles/V1?updateMask=lastLocation", 403, "role", body={"lastLocation": LOC}),
    C("fleet-reader", "PATCH", "tasks/K1?updateMask=state", 403, "role", body={"state": "CLOSED"}),
    C("fleet-reader", "POST", "trips?tripId=T-f", 403, "role"),
    C("fleet-reader", "GET", "vehicles", 403, "claim", claims={"tripid": "*"}),
    # batch tasks: {"taskids": [K1, KB1, KB2]}, Delivery Trusted Driver + Delivery Fleet Reader
    C("batch", "POST", "tasks:batchCreate", 200, "ok",
      body={"requests": [{"taskId": "KB1", "task": {"type": "DELIVERY", "state": "OPEN", "trackingId": "TRB"}},
                         {"taskId": "KB2", "task": {"type": "PICKUP", "state": "OPEN", "trackingId": "TRB"}}]}),
    C("batch", "POST", "tasks:batchCreate", 403, "claim",
      body={"requests": [{"taskId": "KB3", "task": {"type": "DELIVERY", "state": "OPEN"}}]}),
    C("batch", "POST", "tasks:batchCreate", 400, "bad_request", body={"requests": []}),
    C("batch", "GET", "tasks/K1", 200, "ok"),
    C("batch", "GET", "tasks/K2", 403, "claim"),
    C("batch", "PATCH", "tasks/K1?updateMask=state", 200, "ok", body={"state": "CLOSED"}),
    C("batch", "PATCH", "tasks/K2?updateMask=state", 403, "claim", body={"state": "CLOSED"}),
    C("batch", "GET", "tasks", 403, "claim"),
    C("batch", "GET", "tasks", 200, "ok", claims={"taskids": ["*"]}),
    C("batch", "GET", "deliveryVehicles/D1", 403, "claim"),
]


@pytest.mark.parametrize("who,method,path,status,verdict,claims,body,project", CASES)
def test_token_type_allowed_and_neighbours_refused(world, who, method, path, status, verdict, claims, body, project):
    answer = world.standin.call(method, path, world.token(who, claims), body, project)
    expect(answer, status, verdict)
    if status == 200 and method == "GET" and "/" in path.split("?")[0]:
        kind, ident = path.split("?")[0].split("/")
        assert answer.body["name"] == "providers/%s/%s/%s" % (project, kind, ident)


def test_every_token_type_of_the_reference_is_covered():
    whos = {case.values[0] for case in CASES}
    assert whos >= set(CLAIMS) - {"rotating"}
    for who in whos:
        verdicts = {case.values[4] for case in CASES if case.values[0] == who}
        assert "ok" in verdicts and verdicts & {"role", "claim"}, who


# --- the token checks one by one -----------------------------------------------------------------------------

def _hs256(world):
    claims = json.loads(base64.urlsafe_b64decode(world.token("consumer").split(".")[1] + "=="))
    signing_input = compact({"alg": "HS256", "typ": "JWT"}) + "." + compact(claims)
    return signing_input + "." + b64url(hmac.new(b"secret", signing_input.encode(), hashlib.sha256).digest())


def _rs512(world):
    key = world.keys["consumer"]
    claims = json.loads(base64.urlsafe_b64decode(world.token("consumer").split(".")[1] + "=="))
    signing_input = compact({"alg": "RS512", "typ": "JWT", "kid": key.kid}) + "." + compact(claims)
    return signing_input + "." + b64url(key.sign(signing_input.encode(), hashes.SHA512()))


def _tampered(world):
    head, _, sig = world.token("consumer").split(".")
    now = int(time.time())
    claims = {"iss": email("consumer"), "sub": email("consumer"), "aud": AUD, "iat": now, "exp": now + 600,
              "authorization": {"tripid": "T2"}}
    return head + "." + compact(claims) + "." + sig


TOKEN_CHECKS = [
    ("no token", lambda w: None, 401, "no_token"),
    ("not a JWT", lambda w: "not-a-jwt", 401, "malformed"),
    ("parts not JSON", lambda w: "e30.bm90IGpzb24.c2ln", 401, "malformed"),
    ("alg none", lambda w: compact({"alg": "none", "typ": "JWT"}) + "." + w.token("consumer").split(".")[1] + ".",
     401, "bad_alg"),
    ("alg HS256", _hs256, 401, "bad_alg"),
    ("alg RS512", _rs512, 401, "bad_alg"),
    ("sub is not iss", lambda w: w.token("consumer", sub="someone@else.iam.gserviceaccount.com"), 401, "bad_issuer"),
    ("no iss", lambda w: w.token("consumer", iss=None, sub=None), 401, "bad_issuer"),
    ("unknown account", lambda w: w.token("consumer", iss="nobody@acme-fleet.iam.gserviceaccount.com",
                                          sub="nobody@acme-fleet.iam.gserviceaccount.com"), 401, "unknown_account"),
    ("unknown kid", lambda w: w.token("consumer", header={"alg": "RS256", "typ": "JWT", "kid": "f" * 40}),
     401, "unknown_kid"),
    ("another account's key and kid", lambda w: w.token("consumer", key=w.keys["driver"]), 401, "unknown_kid"),
    ("another account's key, no kid", lambda w: w.token("consumer", key=w.keys["driver"],
                                                        header={"alg": "RS256", "typ": "JWT"}), 401, "bad_signature"),
    ("payload changed after signing", _tampered, 401, "bad_signature"),
    ("aud without the slash", lambda w: w.token("consumer", aud="https://fleetengine.googleapis.com"),
     401, "bad_audience"),
    ("aud of OAuth", lambda w: w.token("consumer", aud="https://oauth2.googleapis.com/token"), 401, "bad_audience"),
    ("aud as a list", lambda w: w.token("consumer", aud=[AUD]), 401, "bad_audience"),
    ("no exp", lambda w: w.token("consumer", drop=("exp",)), 401, "bad_time"),
    ("iat a string", lambda w: w.token("consumer", iat=str(int(time.time())), exp=int(time.time()) + 300),
     401, "bad_time"),
    ("expired", lambda w: w.token("consumer", iat=int(time.time()) - 3700, lifetime=3600), 401, "expired"),
    ("lifetime 3601 s", lambda w: w.token("consumer", lifetime=3601), 401, "lifetime"),
    ("lifetime two hours", lambda w: w.token("consumer", lifetime=7200), 401, "lifetime"),
    ("iat 11 min ahead", lambda w: w.token("consumer", iat=int(time.time()) + 660), 401, "iat_future"),
    ("iat 5 min ahead (within skew)", lambda w: w.token("consumer", iat=int(time.time()) + 300, lifetime=3600),
     200, "ok"),
    ("lifetime exactly 3600 s", lambda w: w.token("consumer", lifetime=3600), 200, "ok"),
    ("no kid (every key of the account tried)", lambda w: w.token("consumer", header={"alg": "RS256", "typ": "JWT"}),
     200, "ok"),
]


@pytest.mark.parametrize("make,status,verdict", [pytest.param(m, s, v, id=n) for n, m, s, v in TOKEN_CHECKS])
def test_token_checks(world, make, status, verdict):
    expect(world.standin.call("GET", "trips/T1", make(world)), status, verdict)


def test_401_carries_www_authenticate(world):
    status, body, headers = world.standin.http("GET", world.standin.base + "/v1/providers/%s/trips/T1" % PROJECT)
    assert status == 401 and body["error"]["status"] == "UNAUTHENTICATED"
    assert headers["WWW-Authenticate"].startswith("Bearer ")


# --- roles per project, and the live-acceptance probe --------------------------------------------------------

def test_role_removed_then_granted_again(world):
    token = world.token("consumer")
    expect(world.standin.call("GET", "trips/T1", token), 200, "ok")
    world.standin.control(roles={PROJECT: {email("consumer"): []}})
    try:
        expect(world.standin.call("GET", "trips/T1", token), 403, "role")
        world.standin.control(roles={PROJECT: {email("consumer"): ["roles/fleetengine.driverSdkUser"]}})
        expect(world.standin.call("GET", "vehicles/V2", token), 403, "claim")   # reads vehicles, but not V2
        expect(world.standin.call("PUT", "vehicles/V1?updateMask=lastLocation", token, {"lastLocation": LOC}),
               403, "claim")                                                    # tripid T1 updates no vehicle
    finally:
        world.standin.control(roles={PROJECT: {email("consumer"): ROLES["consumer"]}})
    expect(world.standin.call("GET", "trips/T1", token), 200, "ok")


def test_roles_in_another_project_do_not_count(world):
    world.standin.control(roles={OTHER: {email("driver"): ["roles/fleetengine.driverSdkUser"]}})
    try:
        token = world.token("driver")
        expect(world.standin.call("GET", "vehicles/V1", token, project=OTHER), 200, "ok")
        expect(world.standin.call("GET", "vehicles/V1", world.token("consumer"), project=OTHER), 403, "role")
    finally:
        world.standin.control(roles={OTHER: {email("driver"): None}})
    expect(world.standin.call("GET", "vehicles/V1", world.token("driver"), project=OTHER), 403, "role")


def test_acceptance_probe_cases(world):
    """What the live acceptance check does: get a trip that cannot exist with a fresh short-lived token."""
    probe = "tokengate-probe-0b9f"
    token = world.token("consumer", {"tripid": probe}, lifetime=120)
    expect(world.standin.call("GET", "trips/" + probe, token), 404, "not_found")            # accepted
    expect(world.standin.call("GET", "trips/" + probe, token, project=OTHER), 403, "role")  # the wrong project
    world.standin.control(roles={PROJECT: {email("consumer"): None}})
    try:
        expect(world.standin.call("GET", "trips/" + probe, token), 403, "role")             # the role removed
    finally:
        world.standin.control(roles={PROJECT: {email("consumer"): ROLES["consumer"]}})
    world.standin.control(clockOffsetSec=121)
    try:
        expect(world.standin.call("GET", "trips/" + probe, token), 401, "expired")          # Fleet Engine's clock
    finally:
        world.standin.control(reset=["clock"])
    expect(world.standin.call("GET", "trips/" + probe, token), 404, "not_found")


# --- the store, the log, the answers --------------------------------------------------------------------------

def test_writes_change_what_reads_see(world):
    server = world.token("server")
    created = world.standin.call("POST", "trips?tripId=T-w", server, {"tripType": "SHARED", "vehicleId": "V1"})
    expect(created, 200, "ok")
    assert created.body["name"] == "providers/%s/trips/T-w" % PROJECT and created.body["tripType"] == "SHARED"
    driver = world.token("driver")
    expect(world.standin.call("PUT", "trips/T-w?update_mask=trip_status", driver, {"tripStatus": "COMPLETE"}),
           400, "bad_request")                                                  # the mask is spelt updateMask
    expect(world.standin.call("PUT", "trips/T-w?updateMask=trip_status", driver, {"tripStatus": "COMPLETE"}),
           200, "ok")
    where = {"location": {"latitude": 1.5, "longitude": 2.5}}
    expect(world.standin.call("PUT", "vehicles/V1?updateMask=lastLocation", driver, {"lastLocation": where}),
           200, "ok")
    read = world.standin.call("GET", "trips/T-w", server)
    assert read.body["tripStatus"] == "COMPLETE" and read.body["vehicleId"] == "V1"
    assert world.standin.call("GET", "vehicles/V1", server).body["lastLocation"] == where
    found = world.standin.call("POST", "trips:search", driver, {"vehicleId": "V1"})
    assert "providers/%s/trips/T-w" % PROJECT in [t["name"] for t in found.body["trips"]]
    listed = world.standin.call("GET", "tasks", world.token("delivery-fleet-reader"))
    assert int(listed.body["totalSize"]) == len(listed.body["tasks"]) >= 2
    tracking = world.standin.call("GET", "taskTrackingInfo/TR1", world.token("delivery-consumer"))
    assert tracking.body["name"] == "providers/%s/taskTrackingInfo/TR1" % PROJECT
    assert tracking.body["trackingId"] == "TR1"
    state = world.standin.control()
    assert state["resources"]["trips"][PROJECT]["T-w"]["tripStatus"] == "COMPLETE"


def test_calls_log_says_why(world):
    world.standin.control(reset=["calls"])
    world.standin.call("GET", "trips/T1", world.token("consumer"))
    world.standin.call("GET", "trips/T2", world.token("consumer"))
    world.standin.call("GET", "trips/T1", world.token("consumer", lifetime=4000))
    world.standin.call("GET", "trips/T1", world.token("consumer"), project=OTHER)
    log = world.standin.calls()
    rows = [(c["method"], c["path"], c["status"], c["verdict"], c["rpc"], c["account"]) for c in log["calls"]]
    base = "/v1/providers/%s/trips/" % PROJECT
    assert rows == [("GET", base + "T1", 200, "ok", "GetTrip", email("consumer")),
                    ("GET", base + "T2", 403, "claim", "GetTrip", email("consumer")),
                    ("GET", base + "T1", 401, "lifetime", "GetTrip", email("consumer")),
                    ("GET", "/v1/providers/%s/trips/T1" % OTHER, 403, "role", "GetTrip", email("consumer"))]
    assert log["calls"][1]["permissions"] == ["fleetengine.trips.get"]
    assert log["calls"][0]["kid"] == world.keys["consumer"].kid
    assert log["counts"]["byVerdict"] == {"ok": 1, "claim": 1, "lifetime": 1, "role": 1}


def test_unknown_route_and_verb(world):
    token = world.token("server")
    expect(world.standin.call("DELETE", "trips/T1", token), 404, "no_route")
    expect(world.standin.call("GET", "billableTrips/B1", token), 404, "no_route")
    expect(world.standin.call("POST", "trips/T1", token), 404, "no_route")


def test_injected_fault_then_normal_answers(world):
    world.standin.control(fault={"status": 503, "count": 1})
    expect(world.standin.call("GET", "trips/T1", world.token("consumer")), 503, "fault")
    expect(world.standin.call("GET", "trips/T1", world.token("consumer")), 200, "ok")


# --- public keys: URL, cache, rotation, formats --------------------------------------------------------------

def test_keys_are_cached_per_account_and_refetched_on_an_unknown_kid(world):
    st, path = world.standin, "/jwk/" + email("rotating")
    old, new = world.keys["rotating"], Key()
    st.control(reset=["keys"])
    fetches = lambda: st.control()["accounts"][email("rotating")]["fetches"]
    before = fetches()
    for _ in range(3):
        expect(st.call("GET", "trips/T1", world.token("rotating")), 200, "ok")
    assert fetches() == before + 1                                   # one fetch, then the cache
    world.jwks.docs[path] = {"keys": [old.jwk(), new.jwk()]}        # a key added: not fetched yet
    expect(st.call("GET", "trips/T1", world.token("rotating", key=new)), 200, "ok")
    assert fetches() == before + 2                                   # the unknown kid made it refetch
    world.jwks.docs[path] = {"keys": [new.jwk()]}                   # the old key deleted in "Google Cloud"
    expect(st.call("GET", "trips/T1", world.token("rotating", key=old)), 200, "ok")   # still in the cache
    st.control(jwksRefetchMinSec=60)
    try:
        third = Key()
        world.jwks.docs[path] = {"keys": [new.jwk(), third.jwk()]}
        expect(st.call("GET", "trips/T1", world.token("rotating", key=third)), 401, "unknown_kid")  # too soon
        assert fetches() == before + 2
    finally:
        st.control(jwksRefetchMinSec=0)
    st.control(reset=["keys"])
    expect(st.call("GET", "trips/T1", world.token("rotating", key=old)), 401, "unknown_kid")
    expect(st.call("GET", "trips/T1", world.token("rotating", key=new)), 200, "ok")
    world.jwks.docs[path] = {"keys": [old.jwk()]}
    st.control(reset=["keys"])


def test_x509_map_inline_jwks_and_kids_filter(world):
    st = world.standin
    x509_key, inline_key, shared_a, shared_b = Key(), Key(), Key(), Key()
    accounts = {name: "%s@acme-fleet.iam.gserviceaccount.com" % name for name in ("x509", "inline", "shared-a")}
    world.jwks.docs["/x509/" + accounts["x509"]] = {x509_key.kid: x509_key.cert_pem(accounts["x509"])}
    world.jwks.docs["/providers/acme/jwks.json"] = {"keys": [shared_a.jwk(), shared_b.jwk()]}
    st.control(accounts={accounts["x509"]: {"jwksUrl": world.jwks.url("/x509/" + accounts["x509"])},
                         accounts["inline"]: {"jwks": {"keys": [inline_key.jwk()]}},
                         accounts["shared-a"]: {"jwksUrl": world.jwks.url("/providers/acme/jwks.json"),
                                                "kids": [shared_a.kid]}},
               roles={PROJECT: {a: ["roles/fleetengine.consumerSdkUser"] for a in accounts.values()}})

    def token(account, key):
        now = int(time.time())
        return sign_jwt(key, {"iss": account, "sub": account, "aud": AUD, "iat": now, "exp": now + 300,
                              "authorization": {"tripid": "T1"}})

    expect(st.call("GET", "trips/T1", token(accounts["x509"], x509_key)), 200, "ok")
    expect(st.call("GET", "trips/T1", token(accounts["inline"], inline_key)), 200, "ok")
    expect(st.call("GET", "trips/T1", token(accounts["shared-a"], shared_a)), 200, "ok")
    expect(st.call("GET", "trips/T1", token(accounts["shared-a"], shared_b)), 401, "unknown_kid")
    expect(st.call("GET", "trips/T1", token(accounts["inline"], x509_key)), 401, "unknown_kid")


def test_unreachable_jwks_is_unavailable_not_the_tokens_fault(world):
    st, account, key = world.standin, "gone@acme-fleet.iam.gserviceaccount.com", Key()
    st.control(accounts={account: {"jwksUrl": world.jwks.url("/nothing-here")}},
               roles={PROJECT: {account: ["roles/fleetengine.consumerSdkUser"]}})
    now = int(time.time())
    token = sign_jwt(key, {"iss": account, "sub": account, "aud": AUD, "iat": now, "exp": now + 300,
                           "authorization": {"tripid": "T1"}})
    expect(st.call("GET", "trips/T1", token), 503, "jwks_unavailable")


# --- control ------------------------------------------------------------------------------------------------

def test_control_rejects_what_it_does_not_know(world):
    st = world.standin
    for body in ({"grants": {}},
                 {"roles": {PROJECT: {email("consumer"): ["roles/fleetengine.consumer"]}}},
                 {"accounts": {"a@p.iam.gserviceaccount.com": {"jwksUrl": "https://www.googleapis.com/x"}}},
                 {"accounts": {"a@p.iam.gserviceaccount.com": {}}},
                 {"fault": {"status": 200}},
                 {"reset": ["everything"]}):
        status, answer, _ = st.http("POST", st.base + "/_control", body)
        assert status == 400 and answer["ok"] is False, body
    state = st.control()
    assert state["roles"][PROJECT][email("consumer")] == ROLES["consumer"]


def test_keys_published_by_the_google_standin(world, tmp_path):
    """An account whose keys the Google stand-in publishes (/service_accounts/v1/jwk/ and /metadata/x509/), as a
    gateway test registers it: the token is signed with the account's exported key file."""
    google = os.path.join(os.path.dirname(HERE), "google", "google_standin.py")
    proc = subprocess.Popen([sys.executable, google, "--state-dir", str(tmp_path), "--port", "0", "--max-seconds",
                             "60", "--exit-on-stdin-eof"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    try:
        google_base = "http://127.0.0.1:%d" % json.loads(proc.stdout.readline())["port"]
        account = "fleet-consumer@acme-fleet.iam.gserviceaccount.com"
        status, state, _ = world.standin.http("POST", google_base + "/_control",
                                              {"accounts": [{"email": account, "exportKeyFile": True}]})
        assert status == 200, state
        with open(state["accounts"][account]["keyFile"]) as f:
            key_file = json.load(f)
        private = serialization.load_pem_private_key(key_file["private_key"].encode(), password=None)
        now = int(time.time())
        claims = {"iss": key_file["client_email"], "sub": key_file["client_email"], "aud": AUD, "iat": now,
                  "exp": now + 300, "authorization": {"tripid": "T1"}}
        signing_input = (compact({"alg": "RS256", "typ": "JWT", "kid": key_file["private_key_id"]}) + "."
                         + compact(claims))
        token = signing_input + "." + b64url(private.sign(signing_input.encode(), padding.PKCS1v15(),
                                                          hashes.SHA256()))
        for endpoint in ("/service_accounts/v1/jwk/", "/service_accounts/v1/metadata/x509/"):
            world.standin.control(accounts={account: {"jwksUrl": google_base + endpoint + account}},
                                  roles={PROJECT: {account: ["roles/fleetengine.consumerSdkUser"]}})
            expect(world.standin.call("GET", "trips/T1", token), 200, "ok")
            expect(world.standin.call("GET", "trips/T2", token), 403, "claim")
        world.standin.http("POST", google_base + "/_control",
                           {"disableKeys": [{"email": account, "kid": key_file["private_key_id"]}]})
        world.standin.control(reset=["keys"])
        expect(world.standin.call("GET", "trips/T1", token), 401, "unknown_kid")   # a key disabled in Google Cloud
    finally:
        proc.stdin.close()
        proc.terminate()
        proc.wait(5)
