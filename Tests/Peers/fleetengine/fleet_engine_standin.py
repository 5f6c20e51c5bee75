#!/usr/bin/env python3
"""Loopback stand-in for Google Fleet Engine's REST API that admits a call only as Fleet Engine does.

Start:  python3 fleet_engine_standin.py [--port 0] [--port-file F] [--max-seconds 1800] [--exit-on-stdin-eof] [--verbose]
It binds 127.0.0.1 only and prints exactly one first line to stdout, then flushes:
    {"port": N}
Everything below is served on that port (base URL http://127.0.0.1:N, standing for
https://fleetengine.googleapis.com). Nothing is sent off loopback: a JWKS URL must name a loopback host. Stop it
with SIGTERM (or SIGINT); it also stops by itself after --max-seconds (default 1800) and, with
--exit-on-stdin-eof, when its stdin closes. Python stdlib plus `cryptography` (RSA verification) only.

Sources relied on (read for this stand-in; the page titles are Google's)
  [IAM]   "FleetEngine roles and permissions", https://cloud.google.com/iam/docs/roles-permissions/fleetengine:
          the role IDs and the permissions each holds (ROLE_PERMISSIONS below follows that page, leaving out the
          delete and allowAllActions permissions no call here needs; roles/fleetengine.viewer is in its current
          version).
  [ROLES] "IAM setup and service account roles", https://developers.google.com/maps/documentation/mobility/
          fleet-engine/essentials/set-up-fleet/service-accounts: ondemandAdmin / deliveryAdmin "can perform all
          operations" and "ignore custom JWT claims"; driverSdkUser / consumerSdkUser only reach assigned trips
          and vehicles; "Fleet Engine performs the following security checks on API calls for a resource: 1. the
          calling principal has the appropriate permissions (through role assignment) for the action on the
          resource; 2. for non-Admin roles, the JWT claims passed in the request provide the necessary permission
          for the resource."
  [JWT]   "JSON Web Tokens", https://developers.google.com/maps/documentation/mobility/fleet-engine/essentials/
          set-up-fleet/jwt: header alg RS256, typ JWT, kid = the service account's private_key_id; iss = sub =
          the service account email; aud https://fleetengine.googleapis.com/ ; iat: allow 10 minutes for skew;
          exp: the request fails if it is more than one hour in the future; authorization holds
          tripid / vehicleid (on-demand) or deliveryvehicleid, trackingid, taskid, taskids, and taskids is an
          array: ["t1","t2"] or ["*"].
  [PROTO] googleapis/googleapis google/maps/fleetengine/v1/trip_api.proto, vehicle_api.proto and
          google/maps/fleetengine/delivery/v1/delivery_api.proto: the HTTP bindings (verbs, URL templates, PUT for
          on-demand updates, PATCH for delivery updates, updateMask) and the resource name formats.
  [TTI]   "REST Resource: providers.taskTrackingInfo" (Fleet Engine reference): name is
          providers/{provider}/taskTrackingInfo/{tracking} where tracking is the tracking ID.
  [AUTH]  googlemaps/java-fleetengine-auth README: role <-> token type <-> resource constraint (consumer: trip id;
          driver: vehicle id; delivery consumer: task id OR tracking id; untrusted delivery driver: delivery vehicle
          id; trusted delivery driver: delivery vehicle id and task id; fleet readers and servers: none).
  [REF]   /work/shared/reference/fleet-engine-tokens.md (this project's condensed reference) for the token table.
  Errors use Google's JSON error shape {"error": {"code", "message", "status"}} (google.rpc.Status as Google's
  REST front ends render it; the same shape google_standin.py answers).

REST surface (all under /v1/providers/{project}/..., {project} = the Google Cloud project ID; IDs are URL-decoded)
  rpc                       HTTP                                                permission needed [IAM]
  GetTrip                   GET   trips/{trip}                                  fleetengine.trips.get
  CreateTrip                POST  trips?tripId={trip}          body Trip         fleetengine.trips.create
  UpdateTrip                PUT   trips/{trip}?updateMask=a,b  body Trip         fleetengine.trips.update
  SearchTrips               POST  trips:search                 {"vehicleId"}     fleetengine.trips.search
  GetVehicle                GET   vehicles/{vehicle}                            fleetengine.vehicles.get
  CreateVehicle             POST  vehicles?vehicleId={vehicle} body Vehicle      fleetengine.vehicles.create
  UpdateVehicle             PUT   vehicles/{vehicle}?updateMask=..              fleetengine.vehicles.updateLocation when
                                                                                every mask field is lastLocation or
                                                                                vehicleState, else .update (*1)
  UpdateVehicleLocation     PUT   vehicles/{vehicle}:updateLocation (deprecated) fleetengine.vehicles.updateLocation
  UpdateVehicleAttributes   POST  vehicles/{vehicle}:updateAttributes           fleetengine.vehicles.update
  ListVehicles              GET   vehicles                                      fleetengine.vehicles.list
  SearchVehicles            POST  vehicles:search                               fleetengine.vehicles.search
  SearchFuzzedVehicles      POST  vehicles:searchFuzzed (deprecated)            fleetengine.vehicles.searchFuzzed
  GetDeliveryVehicle        GET   deliveryVehicles/{dv}                         fleetengine.deliveryvehicles.get
  CreateDeliveryVehicle     POST  deliveryVehicles?deliveryVehicleId={dv}       fleetengine.deliveryvehicles.create
  UpdateDeliveryVehicle     PATCH deliveryVehicles/{dv}?updateMask=..           per mask field: lastLocation ->
                                                                                .updateLocation, remainingVehicle-
                                                                                JourneySegments -> .updateVehicleStops,
                                                                                anything else -> .update (*1)
  ListDeliveryVehicles      GET   deliveryVehicles                              fleetengine.deliveryvehicles.list
  CreateTask                POST  tasks?taskId={task}          body Task         fleetengine.tasks.create
  BatchCreateTasks          POST  tasks:batchCreate  {"requests":[{"taskId","task"}]}  fleetengine.tasks.create
  GetTask                   GET   tasks/{task}                                  fleetengine.tasks.get
  UpdateTask                PATCH tasks/{task}?updateMask=..   body Task         fleetengine.tasks.update
  ListTasks                 GET   tasks                                         fleetengine.tasks.list
  GetTaskTrackingInfo       GET   taskTrackingInfo/{trackingId}                 fleetengine.tasktrackinginfo.get
  Mask fields may be snake_case or camelCase (last_location == lastLocation); only their first path segment counts.
  Not served (404 no_route): DELETE methods, billableTrips:report, the deprecated tasks:search.

Roles [IAM] (a role outside this list is refused by the control API)
  roles/fleetengine.consumerSdkUser         trips.get vehicles.get vehicles.search vehicles.searchFuzzed
  roles/fleetengine.driverSdkUser           trips.get trips.search trips.update vehicles.get vehicles.updateLocation
  roles/fleetengine.ondemandAdmin           trips.* vehicles.*                                       claims ignored
  roles/fleetengine.serviceSuperUser        trips.* vehicles.* (legacy; no delete/allowAllActions)  claims ignored (*2)
  roles/fleetengine.deliveryConsumer        tasks.searchWithTrackingId tasktrackinginfo.get
  roles/fleetengine.deliveryUntrustedDriver deliveryvehicles.get deliveryvehicles.updateLocation
  roles/fleetengine.deliveryTrustedDriver   deliveryvehicles.create/get/update/updateLocation/updateVehicleStops
                                            tasks.create tasks.update                   (no tasks.get: see *1)
  roles/fleetengine.deliveryFleetReader     deliveryvehicles.get/list tasks.get/list/searchWithTrackingId
                                            tasktrackinginfo.get
  roles/fleetengine.deliverySuperUser       deliveryvehicles.* tasks.* tasktrackinginfo.get (legacy)  claims ignored (*2)
  roles/fleetengine.deliveryAdmin           deliveryvehicles.* tasks.* tasktrackinginfo.*             claims ignored
  roles/fleetengine.viewer ("Fleet Engine Viewer", the unified fleet reader): deliveryvehicles.get/list
                                            tasks.get/list/searchWithTrackingId tasktrackinginfo.get trips.get/search
                                            vehicles.get/list/search/searchFuzzed
  Permissions are the union over the account's roles in the project named in the URL. If a claims-ignoring role
  alone grants every permission the call needs, the authorization claim is not looked at [ROLES]; otherwise it
  must cover the call.

What the authorization claim must hold for a call (non-admin roles; "ID|*" = that ID or "*"; "" never matches)
  GetTrip/UpdateTrip T      tripid T|*; or the trip exists and vehicleid is its vehicleId|*   (driver sees its trips)
  CreateTrip T              tripid T|*
  SearchTrips {vehicleId V} vehicleid V|*   (no vehicleId in the body: tripid * )
  Get/Update/UpdateLocation/UpdateAttributes vehicle V   vehicleid V|*; for GetVehicle also: tripid names an
                            existing trip whose vehicleId is V     (a rider sees its trip's vehicle, never updates it)
  CreateVehicle V           vehicleid V|*
  ListVehicles              vehicleid *
  SearchVehicles(+Fuzzed)   any non-empty tripid or vehicleid (*3)
  Get/Update/Create delivery vehicle D   deliveryvehicleid D|*
  ListDeliveryVehicles      deliveryvehicleid *
  Get/Update/Create task K  taskid K|*; or "taskids" holds K or "*"; (Get/Update only) or trackingid is the
                            existing task's trackingId|*
  BatchCreateTasks          every requests[].taskId covered as for CreateTask
  ListTasks                 taskid * or taskids ["*"]
  GetTaskTrackingInfo X     trackingid X|*; or taskid * / taskids ["*"]; or taskid/taskids names an existing
                            task whose trackingId is X           (a delivery consumer's {"taskid": K} form [AUTH])
  A claim that reaches a resource only through the resource's content (a driver's vehicleid to a trip, a rider's
  tripid to a vehicle, a taskid to a tracking ID) cannot cover a resource that does not exist: 403 claim, never
  404, so the answer tells nothing about existence. A claim naming the very ID of the URL (or "*") covers it
  whether or not it exists: then a missing resource is 404, after authentication and authorisation passed.

Token check, in this order (first failure answers; "verdict" is what /_calls records)
  401 UNAUTHENTICATED  no_token        no "Authorization: Bearer <jwt>"
                       malformed       not three base64url parts with JSON objects, or a kid that is not a string
                       bad_alg         header alg is not RS256 (none, HS256, RS512, ... all refused) [JWT]
                       bad_issuer      iss missing or not an email, or sub != iss [JWT]
                       unknown_account iss is no account registered with the control API
                       unknown_kid     kid given but in none of the account's published keys (refetched once)
                       bad_signature   no key of the account verifies it (kid given: that key; kid absent: every
                                       key of the account, refetched once before giving up)
                       bad_audience    aud is not exactly the string "https://fleetengine.googleapis.com/"
                       bad_time        iat or exp missing or not a number
                       expired         exp <= now (no grace: chosen, the docs give none for exp)
                       iat_future      iat > now + 600 (the documented 10 minutes of skew)
                       lifetime        exp - iat > 3600 [JWT]; with the iat bound this also keeps exp within
                                       70 minutes of now (the docs' "one hour in the future" plus the skew)
  503 UNAVAILABLE      jwks_unavailable the account's JWKS could not be fetched or read (chosen: a stand-in
                                       misconfiguration is not reported as the token's fault)
  403 PERMISSION_DENIED role           the account holds no role in that project granting the permission(s)
                                       (a role removed, or "the wrong project": roles are granted per project)
  400 INVALID_ARGUMENT bad_request     body not JSON, missing tripId/vehicleId/... query parameter, missing
                                       updateMask (checked after the role, before the claim)
  403 PERMISSION_DENIED claim          the authorization claim does not cover the call (table above)
  404 NOT_FOUND        not_found       the resource does not exist (only now: so "404" means "authenticated and
                                       authorised", which the live acceptance check relies on)
  409 ALREADY_EXISTS   exists          create of an existing ID
  200                  ok
  404 NOT_FOUND        no_route        a path or verb this stand-in does not serve (before any token check)
  <status>             fault           an injected fault (control "fault"), before any token check

  (*1) Chosen where the docs are silent or disagree: the mapping of an update's mask to updateLocation. [IAM]
       gives the untrusted delivery driver only deliveryvehicles.get/updateLocation (not updateVehicleStops,
       not tasks.update) although the Driver SDK's "untrusted" page says it may report stop state and task
       outcome; this stand-in follows [IAM]. vehicleState counts as a location update because the Driver SDK
       user role holds only vehicles.updateLocation and its deprecated UpdateVehicleLocation sets current_state.
  (*2) The legacy super-user roles are treated like the admins (claims ignored), as [AUTH] gives their token
       types "no constraint".
  (*3) [IAM] gives the consumer SDK user vehicles.search; which claim a search needs is undocumented.
  Fleet reader roles (deliveryFleetReader, viewer) are not admins: their claims are checked, so a fleet reader
  token needs its "*" claims (as [REF] mints them).

Resources: an in-memory store per project of trips, vehicles, deliveryVehicles and tasks (a task's
"trackingId" makes it readable as taskTrackingInfo). Every answer carries "name" (providers/{p}/trips/{id}, ...),
the seeded or written fields, and defaults (trip: tripStatus NEW, tripType EXCLUSIVE; vehicle: vehicleState
OFFLINE; task: type DELIVERY, state OPEN). Creates store the body; updates copy the mask's fields from the body.
Lists answer {"vehicles"|"deliveryVehicles"|"tasks": [...], "totalSize": "N"}; SearchTrips {"trips": [...]} for
the body's vehicleId; SearchVehicles {} (no matching is modelled). Every answer of the API carries the header
X-Standin-Verdict: <verdict>.

Control (loopback only, never counted as calls)
  POST /_control with one JSON object; every key optional, applied in this order; unknown keys -> 400:
    {"reset": ["calls","accounts","roles","resources","keys","fault","clock"] | ["all"],
     "accounts": {"a@p.iam.gserviceaccount.com": {"jwksUrl": "http://127.0.0.1:P/service_accounts/v1/jwk/a@..."}
                  | {"jwksUrl": ".../v1/providers/acme/jwks.json", "kids": ["k1"]}   # only these kids count
                  | {"jwks": {"keys": [...]}}                                        # inline, never fetched
                  | null},                                                           # removes the account
         # The JWKS may be {"keys":[JWK...]}, one JWK, or Google's x509 form {"kid": "-----BEGIN CERTIFICATE..."}.
         # RSA keys only. Fetched on first use and cached per account; refetched when a kid is unknown (or a
         # kid-less token fails), at most once per request and once per jwksRefetchMinSec.
         # A JWKS shared by several accounts (a gateway provider's jwks.json) makes their keys interchangeable
         # unless "kids" says which belong to which account.
     "roles": {"project-id": {"a@p.iam.gserviceaccount.com": ["roles/fleetengine.consumerSdkUser"] | [] | null}},
         # replaces that account's roles in that project
     "trips" | "vehicles" | "deliveryVehicles" | "tasks": {"project-id": {"ID": {fields} | null}},
         # seeds (replaces) or deletes resources; fields camelCase as in Fleet Engine's JSON
         # (trip "vehicleId"; task "trackingId", "deliveryVehicleId", "state", ...)
     "clockOffsetSec": 0,          # the stand-in's now = real now + this (e.g. 3700: a fresh token is expired)
     "jwksRefetchMinSec": 0,       # least time between two fetches of one account's JWKS (default 0)
     "fault": {"status": 503, "count": 1} | null}   # the next count API calls answer status (count -1: all)
    -> 200 the state (as GET /_control)
  GET /_control -> {"ok": true, "baseUrl", "accounts": {email: {"jwksUrl", "kids", "inline", "cachedKids",
                    "fetches"}}, "roles": {project: {email: [roles]}}, "resources": {kind: {project: {id: obj}}},
                    "clockOffsetSec", "jwksRefetchMinSec", "fault"}
  GET /_calls (alias /_control/calls) -> {"calls": [{"seq","t","method","path","rpc","project","status",
                    "verdict","detail","account","kid","permissions"}...] (last 5000),
                    "counts": {"byVerdict": {..}, "byStatus": {..}}}
"""

import argparse
import base64
import collections
import json
import os
import re
import signal
import sys
import threading
import time
import traceback
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import padding, rsa

AUDIENCE = "https://fleetengine.googleapis.com/"
IAT_SKEW = 600
MAX_LIFETIME = 3600
MAX_BODY = 1 << 20

_TRIPS = ("trips.get", "trips.search", "trips.update", "trips.create", "trips.updateState")
_VEHICLES = ("vehicles.get", "vehicles.list", "vehicles.search", "vehicles.searchFuzzed", "vehicles.update",
             "vehicles.updateLocation", "vehicles.create")
_DV = ("deliveryvehicles.create", "deliveryvehicles.get", "deliveryvehicles.list", "deliveryvehicles.update",
       "deliveryvehicles.updateLocation", "deliveryvehicles.updateVehicleStops")
_TASKS = ("tasks.create", "tasks.get", "tasks.list", "tasks.searchWithTrackingId", "tasks.update")


def _perms(*names):
    return frozenset("fleetengine." + n for n in names)


# [IAM], role by role (delete and allowAllActions left out: no call here needs them).
ROLE_PERMISSIONS = {
    "roles/fleetengine.consumerSdkUser": _perms("trips.get", "vehicles.get", "vehicles.search", "vehicles.searchFuzzed"),
    "roles/fleetengine.driverSdkUser": _perms("trips.get", "trips.search", "trips.update", "vehicles.get",
                                              "vehicles.updateLocation"),
    "roles/fleetengine.ondemandAdmin": _perms(*(_TRIPS + _VEHICLES)),
    "roles/fleetengine.serviceSuperUser": _perms(*(_TRIPS + _VEHICLES)),
    "roles/fleetengine.deliveryConsumer": _perms("tasks.searchWithTrackingId", "tasktrackinginfo.get"),
    "roles/fleetengine.deliveryUntrustedDriver": _perms("deliveryvehicles.get", "deliveryvehicles.updateLocation"),
    "roles/fleetengine.deliveryTrustedDriver": _perms("deliveryvehicles.create", "deliveryvehicles.get",
                                                      "deliveryvehicles.update", "deliveryvehicles.updateLocation",
                                                      "deliveryvehicles.updateVehicleStops", "tasks.create",
                                                      "tasks.update"),
    "roles/fleetengine.deliveryFleetReader": _perms("deliveryvehicles.get", "deliveryvehicles.list", "tasks.get",
                                                    "tasks.list", "tasks.searchWithTrackingId", "tasktrackinginfo.get"),
    "roles/fleetengine.deliverySuperUser": _perms(*(_DV + _TASKS + ("tasktrackinginfo.get",))),
    "roles/fleetengine.deliveryAdmin": _perms(*(_DV + _TASKS + ("tasktrackinginfo.get",))),
    "roles/fleetengine.viewer": _perms("deliveryvehicles.get", "deliveryvehicles.list", "tasks.get", "tasks.list",
                                       "tasks.searchWithTrackingId", "tasktrackinginfo.get", "trips.get",
                                       "trips.search", "vehicles.get", "vehicles.list", "vehicles.search",
                                       "vehicles.searchFuzzed"),
}
# [ROLES]: the admins ignore custom JWT claims; the legacy super users likewise (*2).
CLAIMS_IGNORED = frozenset({"roles/fleetengine.ondemandAdmin", "roles/fleetengine.deliveryAdmin",
                            "roles/fleetengine.serviceSuperUser", "roles/fleetengine.deliverySuperUser"})

KINDS = ("trips", "vehicles", "deliveryVehicles", "tasks")
VEHICLE_LOCATION_FIELDS = {"lastLocation", "vehicleState"}
DELIVERY_LOCATION_FIELDS = {"lastLocation"}
DELIVERY_STOP_FIELDS = {"remainingVehicleJourneySegments"}

STATUS_NAMES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                409: "ALREADY_EXISTS", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 501: "NOT_IMPLEMENTED",
                503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}
UNAUTHENTICATED_MESSAGE = ("Request had invalid authentication credentials. Expected OAuth 2 access token, login "
                           "cookie or other valid authentication credential.")

# (HTTP method, path after /v1/providers/{project}/, rpc). IDs are any run of characters but / and : ([PROTO]:
# IDs may not contain '/', ':', '?', ',' or '#').
_ID = r"([^/:]+)"
ROUTES = [
    ("GET", r"trips/" + _ID, "GetTrip"),
    ("PUT", r"trips/" + _ID, "UpdateTrip"),
    ("POST", r"trips", "CreateTrip"),
    ("POST", r"trips:search", "SearchTrips"),
    ("GET", r"vehicles/" + _ID, "GetVehicle"),
    ("PUT", r"vehicles/" + _ID, "UpdateVehicle"),
    ("PUT", r"vehicles/" + _ID + r":updateLocation", "UpdateVehicleLocation"),
    ("POST", r"vehicles/" + _ID + r":updateAttributes", "UpdateVehicleAttributes"),
    ("POST", r"vehicles", "CreateVehicle"),
    ("GET", r"vehicles", "ListVehicles"),
    ("POST", r"vehicles:search", "SearchVehicles"),
    ("POST", r"vehicles:searchFuzzed", "SearchFuzzedVehicles"),
    ("GET", r"deliveryVehicles/" + _ID, "GetDeliveryVehicle"),
    ("PATCH", r"deliveryVehicles/" + _ID, "UpdateDeliveryVehicle"),
    ("POST", r"deliveryVehicles", "CreateDeliveryVehicle"),
    ("GET", r"deliveryVehicles", "ListDeliveryVehicles"),
    ("GET", r"tasks/" + _ID, "GetTask"),
    ("PATCH", r"tasks/" + _ID, "UpdateTask"),
    ("POST", r"tasks", "CreateTask"),
    ("POST", r"tasks:batchCreate", "BatchCreateTasks"),
    ("GET", r"tasks", "ListTasks"),
    ("GET", r"taskTrackingInfo/" + _ID, "GetTaskTrackingInfo"),
]
_COMPILED = [(m, re.compile(r"^/v1/providers/([^/:]+)/" + p + r"$"), rpc) for m, p, rpc in ROUTES]

# rpc -> (store kind, query parameter naming the new ID) for creates
CREATE_ID_PARAMS = {"CreateTrip": ("trips", "tripId"), "CreateVehicle": ("vehicles", "vehicleId"),
                    "CreateDeliveryVehicle": ("deliveryVehicles", "deliveryVehicleId"),
                    "CreateTask": ("tasks", "taskId")}
STATIC_PERMISSIONS = {
    "GetTrip": "trips.get", "CreateTrip": "trips.create", "UpdateTrip": "trips.update", "SearchTrips": "trips.search",
    "GetVehicle": "vehicles.get", "CreateVehicle": "vehicles.create", "UpdateVehicleLocation": "vehicles.updateLocation",
    "UpdateVehicleAttributes": "vehicles.update", "ListVehicles": "vehicles.list", "SearchVehicles": "vehicles.search",
    "SearchFuzzedVehicles": "vehicles.searchFuzzed", "GetDeliveryVehicle": "deliveryvehicles.get",
    "CreateDeliveryVehicle": "deliveryvehicles.create", "ListDeliveryVehicles": "deliveryvehicles.list",
    "GetTask": "tasks.get", "UpdateTask": "tasks.update", "CreateTask": "tasks.create",
    "BatchCreateTasks": "tasks.create", "ListTasks": "tasks.list", "GetTaskTrackingInfo": "tasktrackinginfo.get",
}


def b64url_decode(text: str) -> bytes:
    if not re.match(r"^[A-Za-z0-9_-]*$", text):
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def b64url_int(text: str) -> int:
    return int.from_bytes(b64url_decode(text), "big")


def camel(name: str) -> str:
    first = name.split(".")[0]
    parts = first.split("_")
    return parts[0] + "".join(p[:1].upper() + p[1:] for p in parts[1:])


def is_loopback_url(url: str) -> bool:
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return False
    host = (parts.hostname or "").lower()
    return parts.scheme in ("http", "https") and (host == "localhost" or host == "::1" or host.startswith("127."))


class ControlError(Exception):
    pass


class Reply(Exception):
    """Raised to answer at once: status, JSON body, verdict and a detail for the call log."""

    def __init__(self, status, body, verdict, detail="", headers=None):
        super().__init__(status)
        self.status, self.body, self.verdict, self.detail = status, body, verdict, detail
        self.headers = headers or {}


def error(status, verdict, message, detail=None, headers=None):
    body = {"error": {"code": status, "message": message, "status": STATUS_NAMES.get(status, "UNKNOWN")}}
    return Reply(status, body, verdict, detail if detail is not None else message, headers)


def unauthenticated(verdict, detail):
    return error(401, verdict, UNAUTHENTICATED_MESSAGE, detail,
                 {"WWW-Authenticate": 'Bearer realm="https://accounts.google.com/", error="invalid_token"'})


class PublicKey:
    def __init__(self, kid, key):
        self.kid, self.key = kid, key

    def verify(self, signature: bytes, data: bytes) -> bool:
        try:
            self.key.verify(signature, data, padding.PKCS1v15(), hashes.SHA256())
            return True
        except (InvalidSignature, ValueError):
            return False


def parse_key_set(doc):
    """Public RSA keys from a JWKS, a single JWK, or Google's x509 map {kid: PEM certificate}."""
    keys = []
    if isinstance(doc, dict) and isinstance(doc.get("keys"), list):
        jwks = doc["keys"]
    elif isinstance(doc, dict) and doc.get("kty"):
        jwks = [doc]
    elif isinstance(doc, dict) and doc and all(isinstance(v, str) and "BEGIN CERTIFICATE" in v for v in doc.values()):
        for kid, pem in doc.items():
            key = x509.load_pem_x509_certificate(pem.encode("ascii")).public_key()
            if isinstance(key, rsa.RSAPublicKey):
                keys.append(PublicKey(kid, key))
        return keys
    else:
        raise ValueError("not a JWKS, a JWK or an x509 key map")
    for jwk in jwks:
        if not isinstance(jwk, dict) or jwk.get("kty") != "RSA" or "n" not in jwk or "e" not in jwk:
            continue
        if jwk.get("alg") not in (None, "RS256") or jwk.get("use") not in (None, "sig"):
            continue
        key = rsa.RSAPublicNumbers(b64url_int(jwk["e"]), b64url_int(jwk["n"])).public_key()
        keys.append(PublicKey(jwk.get("kid"), key))
    return keys


class Account:
    def __init__(self, email, spec):
        self.email = email
        if not isinstance(spec, dict):
            raise ControlError("accounts[%r] must be an object with jwksUrl or jwks" % email)
        unknown = set(spec) - {"jwksUrl", "jwks", "kids"}
        if unknown:
            raise ControlError("accounts[%r]: unknown keys %s" % (email, sorted(unknown)))
        self.url = spec.get("jwksUrl")
        self.inline = spec.get("jwks")
        if (self.url is None) == (self.inline is None):
            raise ControlError("accounts[%r] needs exactly one of jwksUrl and jwks" % email)
        if self.url is not None and (not isinstance(self.url, str) or not is_loopback_url(self.url)):
            raise ControlError("accounts[%r].jwksUrl must be an http(s) URL on a loopback host: %r" % (email, self.url))
        kids = spec.get("kids")
        if kids is not None and (not isinstance(kids, list) or not all(isinstance(k, str) for k in kids)):
            raise ControlError("accounts[%r].kids must be a list of key IDs" % email)
        self.kids = set(kids) if kids is not None else None
        self.keys = None          # cached [PublicKey] or None
        self.fetched_at = 0.0
        self.fetches = 0
        self.fetch_lock = threading.Lock()
        if self.inline is not None:
            try:
                self.keys = self.filter(parse_key_set(self.inline))
            except (ValueError, TypeError, KeyError) as e:
                raise ControlError("accounts[%r].jwks: %s" % (email, e)) from None

    def filter(self, keys):
        return [k for k in keys if self.kids is None or k.kid in self.kids]

    def describe(self):
        return {"jwksUrl": self.url, "kids": sorted(self.kids) if self.kids is not None else None,
                "inline": self.inline is not None,
                "cachedKids": [k.kid for k in self.keys] if self.keys is not None else None,
                "fetches": self.fetches}


class JwksUnavailable(Exception):
    pass


class State:
    def __init__(self):
        self.lock = threading.RLock()
        self.base_url = ""
        self.accounts = {}
        self.roles = {}        # project -> {email: set(roles)}
        self.store = {k: {} for k in KINDS}   # kind -> project -> id -> dict
        self.clock_offset = 0.0
        self.refetch_min = 0.0
        self.fault = None
        self.seq = 0
        self.log = collections.deque(maxlen=5000)
        self.by_verdict = collections.Counter()
        self.by_status = collections.Counter()

    def now(self):
        return time.time() + self.clock_offset

    # --- keys ---------------------------------------------------------------------------------------
    def account_keys(self, account, refetch=False):
        """The account's keys, fetched when not cached (or when refetch and the rate limit allows)."""
        if account.inline is not None:
            return account.keys
        with account.fetch_lock:
            if account.keys is not None and not refetch:
                return account.keys
            if account.keys is not None and time.time() - account.fetched_at < self.refetch_min:
                return account.keys
            try:
                with urllib.request.urlopen(urllib.request.Request(account.url, headers={"Accept": "application/json"}),
                                            timeout=5) as response:
                    doc = json.loads(response.read(MAX_BODY))
                keys = account.filter(parse_key_set(doc))
            except (OSError, ValueError, TypeError, KeyError, urllib.error.URLError) as e:
                raise JwksUnavailable("%s: %s" % (account.url, e)) from None
            account.keys, account.fetched_at = keys, time.time()
            account.fetches += 1
            return keys

    # --- calls --------------------------------------------------------------------------------------
    def record(self, entry):
        with self.lock:
            self.seq += 1
            entry = dict(entry, seq=self.seq, t=round(time.time(), 3))
            self.log.append(entry)
            self.by_verdict[entry["verdict"]] += 1
            self.by_status[str(entry["status"])] += 1

    def take_fault(self):
        with self.lock:
            fault = self.fault
            if fault is None:
                return None
            if fault["count"] > 0:
                fault["count"] -= 1
                if fault["count"] == 0:
                    self.fault = None
            return dict(fault)

    # --- control ------------------------------------------------------------------------------------
    def apply_control(self, body):
        allowed = ("reset", "accounts", "roles") + KINDS + ("clockOffsetSec", "jwksRefetchMinSec", "fault")
        unknown = set(body) - set(allowed)
        if unknown:
            raise ControlError("unknown control keys: %s (allowed: %s)" % (sorted(unknown), ", ".join(allowed)))
        with self.lock:
            resets = body.get("reset", [])
            if not isinstance(resets, list):
                raise ControlError("reset must be a list")
            if "all" in resets:
                resets = ["calls", "accounts", "roles", "resources", "fault", "clock"]
            for what in resets:
                if what == "calls":
                    self.log.clear()
                    self.by_verdict.clear()
                    self.by_status.clear()
                elif what == "accounts":
                    self.accounts.clear()
                elif what == "roles":
                    self.roles.clear()
                elif what == "resources":
                    self.store = {k: {} for k in KINDS}
                elif what == "keys":
                    for account in self.accounts.values():
                        if account.inline is None:
                            account.keys = None
                elif what == "fault":
                    self.fault = None
                elif what == "clock":
                    self.clock_offset = 0.0
                else:
                    raise ControlError("reset takes calls, accounts, roles, resources, keys, fault, clock, all: %r"
                                       % (what,))
            accounts = body.get("accounts", {})
            if not isinstance(accounts, dict):
                raise ControlError("accounts must map email -> {jwksUrl|jwks} or null")
            for email, spec in accounts.items():
                if spec is None:
                    self.accounts.pop(email, None)
                    continue
                if "@" not in email:
                    raise ControlError("account email must look like name@project.iam.gserviceaccount.com: %r" % email)
                self.accounts[email] = Account(email, spec)
            roles = body.get("roles", {})
            if not isinstance(roles, dict):
                raise ControlError("roles must map project -> {email: [roles]}")
            for project, grants in roles.items():
                if not isinstance(grants, dict):
                    raise ControlError("roles[%r] must map email -> [roles]" % project)
                for email, names in grants.items():
                    names = names or []
                    if not isinstance(names, list):
                        raise ControlError("roles[%r][%r] must be a list" % (project, email))
                    bad = [n for n in names if n not in ROLE_PERMISSIONS]
                    if bad:
                        raise ControlError("unknown roles %s (known: %s)" % (bad, ", ".join(sorted(ROLE_PERMISSIONS))))
                    if names:
                        self.roles.setdefault(project, {})[email] = set(names)
                    else:
                        self.roles.get(project, {}).pop(email, None)
            for kind in KINDS:
                seeds = body.get(kind, {})
                if not isinstance(seeds, dict):
                    raise ControlError("%s must map project -> {id: object|null}" % kind)
                for project, items in seeds.items():
                    if not isinstance(items, dict):
                        raise ControlError("%s[%r] must map id -> object|null" % (kind, project))
                    for ident, obj in items.items():
                        if obj is None:
                            self.store[kind].get(project, {}).pop(ident, None)
                        elif isinstance(obj, dict):
                            self.store[kind].setdefault(project, {})[ident] = dict(obj)
                        else:
                            raise ControlError("%s[%r][%r] must be an object or null" % (kind, project, ident))
            if "clockOffsetSec" in body:
                if not isinstance(body["clockOffsetSec"], (int, float)) or isinstance(body["clockOffsetSec"], bool):
                    raise ControlError("clockOffsetSec must be a number")
                self.clock_offset = float(body["clockOffsetSec"])
            if "jwksRefetchMinSec" in body:
                value = body["jwksRefetchMinSec"]
                if not isinstance(value, (int, float)) or isinstance(value, bool) or value < 0:
                    raise ControlError("jwksRefetchMinSec must be a non-negative number")
                self.refetch_min = float(value)
            if "fault" in body:
                fault = body["fault"]
                if fault is None:
                    self.fault = None
                else:
                    if not isinstance(fault, dict) or set(fault) - {"status", "count"}:
                        raise ControlError("fault must be {\"status\": N, \"count\": N} or null")
                    status, count = fault.get("status"), fault.get("count", 1)
                    if not isinstance(status, int) or not 400 <= status <= 599:
                        raise ControlError("fault status must be an HTTP error status")
                    if not isinstance(count, int) or count == 0 or count < -1:
                        raise ControlError("fault count must be a positive integer or -1")
                    self.fault = {"status": status, "count": count}
            return self.snapshot()

    def snapshot(self):
        with self.lock:
            return {"ok": True, "baseUrl": self.base_url,
                    "accounts": {e: a.describe() for e, a in self.accounts.items()},
                    "roles": {p: {e: sorted(r) for e, r in g.items()} for p, g in self.roles.items()},
                    "resources": json.loads(json.dumps(self.store)),
                    "clockOffsetSec": self.clock_offset, "jwksRefetchMinSec": self.refetch_min,
                    "fault": dict(self.fault) if self.fault else None}


# --- claims ----------------------------------------------------------------------------------------------

def claim(auth, key):
    value = auth.get(key)
    return value if isinstance(value, str) and value else None


def covers(auth, key, ident):
    value = claim(auth, key)
    return value is not None and ident is not None and (value == "*" or value == ident)


def is_star(auth, key):
    return claim(auth, key) == "*"


def task_ids(auth):
    value = auth.get("taskids")
    return [v for v in value if isinstance(v, str) and v] if isinstance(value, list) else []


def covers_task_id(auth, task_id):
    ids = task_ids(auth)
    return covers(auth, "taskid", task_id) or task_id in ids or "*" in ids


def all_tasks(auth):
    return is_star(auth, "taskid") or "*" in task_ids(auth)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    state: State = None
    verbose = False

    def version_string(self):
        return "ESF"

    def log_message(self, fmt, *args):
        if self.verbose:
            sys.stderr.write("fleet-engine-standin: " + (fmt % args) + "\n")

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
                    raise error(413, "bad_request", "Request body too large.")
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise error(413, "bad_request", "Request body too large.")
        return self.rfile.read(length) if length else b""

    def send(self, status, body, headers):
        data = json.dumps(body, indent=2).encode("utf-8") + b"\n"
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=UTF-8")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = lambda self: self.dispatch()

    def dispatch(self):
        url = urllib.parse.urlsplit(self.path)
        self.url_path = url.path
        self.query = urllib.parse.parse_qs(url.query, keep_blank_values=True)
        self.entry = {"method": self.command, "path": self.path, "rpc": None, "project": None, "account": None,
                      "kid": None, "permissions": None}
        control = url.path == "/_calls" or url.path == "/_control" or url.path.startswith("/_control/")
        try:
            body = self.read_body()
            if control:
                self.handle_control(body)
            self.handle_api(body)
            raise error(500, "internal", "handler did not answer")
        except Reply as r:
            headers = dict(r.headers)
            if not control:
                headers["X-Standin-Verdict"] = r.verdict
                self.state.record(dict(self.entry, status=r.status, verdict=r.verdict, detail=r.detail))
            self.send(r.status, r.body, headers)
        except Exception:  # a bug in the stand-in: answer 500 and say why on stderr
            traceback.print_exc(file=sys.stderr)
            if not control:
                self.state.record(dict(self.entry, status=500, verdict="internal", detail="stand-in failure"))
            self.send(500, {"error": {"code": 500, "message": "stand-in failure", "status": "INTERNAL"}}, {})

    # --- control ------------------------------------------------------------------------------------
    def handle_control(self, body):
        st = self.state
        if not self.client_address[0].startswith("127."):
            raise Reply(403, {"error": "control is loopback only"}, "control")
        if self.url_path in ("/_calls", "/_control/calls") and self.command == "GET":
            with st.lock:
                raise Reply(200, {"calls": list(st.log), "counts": {"byVerdict": dict(st.by_verdict),
                                                                     "byStatus": dict(st.by_status)}}, "control")
        if self.url_path == "/_control" and self.command == "GET":
            raise Reply(200, st.snapshot(), "control")
        if self.url_path == "/_control" and self.command == "POST":
            try:
                request = json.loads(body or b"{}")
                if not isinstance(request, dict):
                    raise ControlError("control body must be a JSON object")
                raise Reply(200, st.apply_control(request), "control")
            except (ControlError, ValueError) as e:
                raise Reply(400, {"ok": False, "error": str(e)}, "control") from None
        raise Reply(404, {"error": "control: GET|POST /_control, GET /_calls"}, "control")

    # --- the API ------------------------------------------------------------------------------------
    def route(self):
        for method, pattern, rpc in _COMPILED:
            m = pattern.match(self.url_path)
            if m and method == self.command:
                groups = [urllib.parse.unquote(g) for g in m.groups()]
                return rpc, groups[0], (groups[1] if len(groups) > 1 else None)
        return None

    def handle_api(self, raw_body):
        st = self.state
        route = self.route()
        if route is None:
            raise error(404, "no_route", "Method not found.", "no Fleet Engine route for %s %s"
                        % (self.command, self.url_path))
        rpc, project, ident = route
        self.entry.update(rpc=rpc, project=project)
        fault = st.take_fault()
        if fault is not None:
            raise error(fault["status"], "fault", "Injected fault.")
        auth = self.authenticate()
        permissions = self.permissions(rpc)
        self.entry["permissions"] = sorted(permissions)
        claims_checked = self.authorize_role(project, permissions)
        body = self.parse_body(raw_body)
        self.validate(rpc, body)
        if claims_checked:
            self.authorize_claim(rpc, project, ident, body, auth)
        self.execute(rpc, project, ident, body)

    def authenticate(self):
        st = self.state
        header = self.headers.get("Authorization", "")
        if header[:7].lower() != "bearer " or not header[7:].strip():
            raise unauthenticated("no_token", "no Authorization: Bearer header")
        parts = header[7:].strip().split(".")
        if len(parts) != 3:
            raise unauthenticated("malformed", "the bearer token is not a compact JWS (three dot-separated parts)")
        try:
            head = json.loads(b64url_decode(parts[0]))
            claims = json.loads(b64url_decode(parts[1]))
            signature = b64url_decode(parts[2])
        except (ValueError, TypeError):
            raise unauthenticated("malformed", "a JWT part is not base64url JSON") from None
        if not isinstance(head, dict) or not isinstance(claims, dict):
            raise unauthenticated("malformed", "the JWT header or payload is not a JSON object")
        kid = head.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise unauthenticated("malformed", "kid is not a string")
        self.entry["kid"] = kid
        if head.get("alg") != "RS256":
            raise unauthenticated("bad_alg", "alg %r: Fleet Engine accepts RS256 only" % (head.get("alg"),))
        iss, sub = claims.get("iss"), claims.get("sub")
        if isinstance(iss, str):
            self.entry["account"] = iss
        if not isinstance(iss, str) or "@" not in iss or sub != iss:
            raise unauthenticated("bad_issuer", "iss must be the service account's email and sub the same (iss %r, "
                                                "sub %r)" % (iss, sub))
        with st.lock:
            account = st.accounts.get(iss)
        if account is None:
            raise unauthenticated("unknown_account", "no service account %s is known" % iss)
        signed = (parts[0] + "." + parts[1]).encode("ascii")
        self.verify_signature(account, kid, signed, signature)
        if claims.get("aud") != AUDIENCE:
            raise unauthenticated("bad_audience", "aud %r is not %r" % (claims.get("aud"), AUDIENCE))
        iat, exp = claims.get("iat"), claims.get("exp")
        number = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
        if not number(iat) or not number(exp):
            raise unauthenticated("bad_time", "iat and exp must be numbers (iat %r, exp %r)" % (iat, exp))
        now = st.now()
        if exp <= now:
            raise unauthenticated("expired", "the token expired %d s ago" % int(now - exp))
        if iat > now + IAT_SKEW:
            raise unauthenticated("iat_future", "iat is %d s in the future (more than %d s of skew)"
                                  % (int(iat - now), IAT_SKEW))
        if exp - iat > MAX_LIFETIME:
            raise unauthenticated("lifetime", "exp - iat is %d s: at most %d" % (int(exp - iat), MAX_LIFETIME))
        auth = claims.get("authorization")
        return auth if isinstance(auth, dict) else {}

    def verify_signature(self, account, kid, signed, signature):
        st = self.state
        try:
            keys = st.account_keys(account)
            refetched = False
            if kid is not None:
                candidates = [k for k in keys if k.kid == kid]
                if not candidates:
                    keys, refetched = st.account_keys(account, refetch=True), True
                    candidates = [k for k in keys if k.kid == kid]
                if not candidates:
                    raise unauthenticated("unknown_kid", "kid %s is not among the published keys of %s"
                                          % (kid, account.email))
                if any(k.verify(signature, signed) for k in candidates):
                    return
                raise unauthenticated("bad_signature", "the signature does not verify with key %s of %s"
                                      % (kid, account.email))
            if any(k.verify(signature, signed) for k in keys):
                return
            if not refetched and account.inline is None:
                keys = st.account_keys(account, refetch=True)
                if any(k.verify(signature, signed) for k in keys):
                    return
            raise unauthenticated("bad_signature", "no published key of %s verifies the signature (no kid)"
                                  % account.email)
        except JwksUnavailable as e:
            raise error(503, "jwks_unavailable", "The service is currently unavailable.",
                        "the public keys of %s could not be fetched: %s" % (account.email, e)) from None

    def permissions(self, rpc):
        if rpc in STATIC_PERMISSIONS:
            return {"fleetengine." + STATIC_PERMISSIONS[rpc]}
        fields = {camel(f) for f in ",".join(self.query.get("updateMask", [])).split(",") if f.strip()}
        if rpc == "UpdateVehicle":
            if fields and fields <= VEHICLE_LOCATION_FIELDS:
                return {"fleetengine.vehicles.updateLocation"}
            return {"fleetengine.vehicles.update"}
        if rpc == "UpdateDeliveryVehicle":
            needed = set()
            for f in fields:
                if f in DELIVERY_LOCATION_FIELDS:
                    needed.add("fleetengine.deliveryvehicles.updateLocation")
                elif f in DELIVERY_STOP_FIELDS:
                    needed.add("fleetengine.deliveryvehicles.updateVehicleStops")
                else:
                    needed.add("fleetengine.deliveryvehicles.update")
            return needed or {"fleetengine.deliveryvehicles.update"}
        raise AssertionError(rpc)

    def authorize_role(self, project, permissions):
        """403 role unless the account's roles in project grant every permission; True when claims must be checked."""
        st = self.state
        iss = self.entry["account"]
        with st.lock:
            roles = set(st.roles.get(project, {}).get(iss, set()))
        granted = set()
        for role in roles:
            granted |= ROLE_PERMISSIONS[role]
        if not permissions <= granted:
            missing = sorted(permissions - granted)
            raise error(403, "role", "Permission '%s' denied on resource 'providers/%s' (or it may not exist)."
                        % (missing[0], project),
                        "%s holds %s in project %s: not %s" % (iss, sorted(roles) or "no Fleet Engine role", project,
                                                                ", ".join(missing)))
        admin = any(role in CLAIMS_IGNORED and permissions <= ROLE_PERMISSIONS[role] for role in roles)
        return not admin

    def parse_body(self, raw):
        if self.command not in ("POST", "PUT", "PATCH"):
            return {}
        try:
            body = json.loads(raw or b"{}")
        except ValueError:
            raise error(400, "bad_request", "Invalid JSON payload received.") from None
        if not isinstance(body, dict):
            raise error(400, "bad_request", "Invalid JSON payload received: the body must be an object.")
        return body

    def validate(self, rpc, body):
        """400 for a request Fleet Engine could not act on (after the role check, before the claim check)."""
        if rpc.startswith("Update") and rpc not in ("UpdateVehicleLocation", "UpdateVehicleAttributes"):
            if not [f for f in ",".join(self.query.get("updateMask", [])).split(",") if f.strip()]:
                raise error(400, "bad_request", "update_mask must contain at least one field.")
        if rpc in CREATE_ID_PARAMS and not self.query_param(CREATE_ID_PARAMS[rpc][1]):
            raise error(400, "bad_request", "%s is required." % CREATE_ID_PARAMS[rpc][1])
        if rpc == "BatchCreateTasks":
            requests = body.get("requests")
            if not isinstance(requests, list) or not requests or not all(
                    isinstance(r, dict) and isinstance(r.get("taskId"), str) and r["taskId"] for r in requests):
                raise error(400, "bad_request", "requests must be a non-empty list of {taskId, task}.")

    def query_param(self, name):
        values = self.query.get(name)
        return values[0] if values and values[0] else None

    def lookup(self, kind, project, ident):
        with self.state.lock:
            obj = self.state.store[kind].get(project, {}).get(ident)
            return dict(obj) if obj is not None else None

    def authorize_claim(self, rpc, project, ident, body, auth):
        ok = False
        if rpc in ("GetTrip", "UpdateTrip"):
            trip = self.lookup("trips", project, ident)
            ok = covers(auth, "tripid", ident) or (
                trip is not None and covers(auth, "vehicleid", trip.get("vehicleId")))
        elif rpc == "CreateTrip":
            ok = covers(auth, "tripid", self.query_param("tripId"))
        elif rpc == "SearchTrips":
            vehicle = body.get("vehicleId") if isinstance(body.get("vehicleId"), str) and body.get("vehicleId") else None
            ok = covers(auth, "vehicleid", vehicle) if vehicle else is_star(auth, "tripid")
        elif rpc in ("GetVehicle", "UpdateVehicle", "UpdateVehicleLocation", "UpdateVehicleAttributes"):
            ok = covers(auth, "vehicleid", ident)
            trip_id = claim(auth, "tripid")
            if not ok and rpc == "GetVehicle" and trip_id and trip_id != "*":
                trip = self.lookup("trips", project, trip_id)
                ok = trip is not None and trip.get("vehicleId") == ident
        elif rpc == "CreateVehicle":
            ok = covers(auth, "vehicleid", self.query_param("vehicleId"))
        elif rpc == "ListVehicles":
            ok = is_star(auth, "vehicleid")
        elif rpc in ("SearchVehicles", "SearchFuzzedVehicles"):
            ok = claim(auth, "tripid") is not None or claim(auth, "vehicleid") is not None
        elif rpc in ("GetDeliveryVehicle", "UpdateDeliveryVehicle"):
            ok = covers(auth, "deliveryvehicleid", ident)
        elif rpc == "CreateDeliveryVehicle":
            ok = covers(auth, "deliveryvehicleid", self.query_param("deliveryVehicleId"))
        elif rpc == "ListDeliveryVehicles":
            ok = is_star(auth, "deliveryvehicleid")
        elif rpc in ("GetTask", "UpdateTask"):
            task = self.lookup("tasks", project, ident)
            ok = covers_task_id(auth, ident) or (task is not None and covers(auth, "trackingid", task.get("trackingId")))
        elif rpc == "CreateTask":
            ok = covers_task_id(auth, self.query_param("taskId"))
        elif rpc == "BatchCreateTasks":
            requests = body.get("requests")
            ids = [r.get("taskId") for r in requests if isinstance(r, dict)] if isinstance(requests, list) else []
            ok = bool(ids) and all(isinstance(i, str) and covers_task_id(auth, i) for i in ids)
        elif rpc == "ListTasks":
            ok = all_tasks(auth)
        elif rpc == "GetTaskTrackingInfo":
            ok = covers(auth, "trackingid", ident) or all_tasks(auth)
            if not ok:
                with self.state.lock:
                    tasks = dict(self.state.store["tasks"].get(project, {}))
                ok = any(t.get("trackingId") == ident and covers_task_id(auth, k) for k, t in tasks.items())
        if not ok:
            shown = json.dumps(auth, separators=(",", ":"), sort_keys=True)
            raise error(403, "claim", "The JWT's authorization claims do not permit this request.",
                        "authorization %s does not cover %s on %s" % (shown, rpc, self.url_path))

    # --- resources ----------------------------------------------------------------------------------
    @staticmethod
    def render(kind, project, ident, obj):
        out = {"name": "providers/%s/%s/%s" % (project, kind, ident)}
        if kind == "trips":
            out.update(tripStatus="NEW", tripType="EXCLUSIVE")
        elif kind == "vehicles":
            out.update(vehicleState="OFFLINE")
        elif kind == "tasks":
            out.update(type="DELIVERY", state="OPEN")
        out.update({k: v for k, v in obj.items() if k != "name"})
        return out

    def execute(self, rpc, project, ident, body):
        st = self.state
        kinds = {"Trip": "trips", "Vehicle": "vehicles", "DeliveryVehicle": "deliveryVehicles", "Task": "tasks"}
        payload_keys = {"trips": "trip", "vehicles": "vehicle", "deliveryVehicles": "deliveryVehicle", "tasks": "task"}
        if rpc in ("GetTrip", "GetVehicle", "GetDeliveryVehicle", "GetTask"):
            kind = kinds[rpc[3:]]
            obj = self.lookup(kind, project, ident)
            if obj is None:
                raise self.not_found(kind, project, ident)
            raise Reply(200, self.render(kind, project, ident, obj), "ok")
        if rpc in ("UpdateTrip", "UpdateVehicle", "UpdateDeliveryVehicle", "UpdateTask"):
            kind = kinds[rpc[6:]]
            mask = [camel(f) for f in ",".join(self.query.get("updateMask", [])).split(",") if f.strip()]
            if not mask:
                raise error(400, "bad_request", "update_mask must contain at least one field.")
            # The resource may come as the body (gRPC transcoding: body is the resource) or wrapped.
            resource = body.get(payload_keys[kind]) if isinstance(body.get(payload_keys[kind]), dict) else body
            with st.lock:
                obj = st.store[kind].get(project, {}).get(ident)
                if obj is None:
                    raise self.not_found(kind, project, ident)
                for field in mask:
                    if field in resource:
                        obj[field] = resource[field]
                    else:
                        obj.pop(field, None)
                out = self.render(kind, project, ident, obj)
            raise Reply(200, out, "ok")
        if rpc in CREATE_ID_PARAMS:
            kind, param = CREATE_ID_PARAMS[rpc]
            new_id = self.query_param(param)
            if not new_id:
                raise error(400, "bad_request", "%s is required." % param)
            resource = body.get(payload_keys[kind]) if isinstance(body.get(payload_keys[kind]), dict) else body
            with st.lock:
                items = st.store[kind].setdefault(project, {})
                if new_id in items:
                    raise error(409, "exists", "Requested entity already exists.",
                                "providers/%s/%s/%s exists" % (project, kind, new_id))
                items[new_id] = {k: v for k, v in resource.items() if k != "name"}
                out = self.render(kind, project, new_id, items[new_id])
            raise Reply(200, out, "ok")
        if rpc == "BatchCreateTasks":
            requests = body.get("requests")
            if not isinstance(requests, list) or not requests or not all(
                    isinstance(r, dict) and isinstance(r.get("taskId"), str) and r["taskId"] for r in requests):
                raise error(400, "bad_request", "requests must be a non-empty list of {taskId, task}.")
            with st.lock:
                items = st.store["tasks"].setdefault(project, {})
                ids = [r["taskId"] for r in requests]
                taken = [i for i in ids if i in items]
                if taken or len(set(ids)) != len(ids):
                    raise error(409, "exists", "Requested entity already exists.", "tasks exist: %s" % taken)
                created = []
                for r in requests:
                    task = r.get("task") if isinstance(r.get("task"), dict) else {}
                    items[r["taskId"]] = {k: v for k, v in task.items() if k != "name"}
                    created.append(self.render("tasks", project, r["taskId"], items[r["taskId"]]))
            raise Reply(200, {"tasks": created}, "ok")
        if rpc == "UpdateVehicleLocation":
            with st.lock:
                obj = st.store["vehicles"].get(project, {}).get(ident)
                if obj is None:
                    raise self.not_found("vehicles", project, ident)
                location = body.get("currentLocation") if isinstance(body.get("currentLocation"), dict) else {}
                obj["lastLocation"] = location
                if body.get("currentState"):
                    obj["vehicleState"] = body["currentState"]
            raise Reply(200, location, "ok")
        if rpc == "UpdateVehicleAttributes":
            with st.lock:
                obj = st.store["vehicles"].get(project, {}).get(ident)
                if obj is None:
                    raise self.not_found("vehicles", project, ident)
                attributes = {a.get("key"): a for a in obj.get("attributes", []) if isinstance(a, dict)}
                for a in body.get("attributes") or []:
                    if isinstance(a, dict):
                        attributes[a.get("key")] = a
                obj["attributes"] = list(attributes.values())
                out = {"attributes": obj["attributes"]}
            raise Reply(200, out, "ok")
        if rpc in ("ListVehicles", "ListDeliveryVehicles", "ListTasks"):
            kind = {"ListVehicles": "vehicles", "ListDeliveryVehicles": "deliveryVehicles", "ListTasks": "tasks"}[rpc]
            with st.lock:
                items = sorted(st.store[kind].get(project, {}).items())
                listed = [self.render(kind, project, i, o) for i, o in items]
            out = {kind: listed, "totalSize": str(len(listed))} if listed else {"totalSize": "0"}
            raise Reply(200, out, "ok")
        if rpc == "SearchTrips":
            vehicle = body.get("vehicleId")
            with st.lock:
                items = sorted(st.store["trips"].get(project, {}).items())
                trips = [self.render("trips", project, i, o) for i, o in items
                         if not vehicle or o.get("vehicleId") == vehicle]
            raise Reply(200, {"trips": trips} if trips else {}, "ok")
        if rpc in ("SearchVehicles", "SearchFuzzedVehicles"):
            raise Reply(200, {}, "ok")
        if rpc == "GetTaskTrackingInfo":
            with st.lock:
                tasks = sorted(st.store["tasks"].get(project, {}).items())
            matching = [(i, t) for i, t in tasks if t.get("trackingId") == ident]
            if not matching:
                raise error(404, "not_found", "Requested entity was not found.",
                            "no task of providers/%s has tracking ID %s" % (project, ident))
            task_id, task = matching[0]
            out = {"name": "providers/%s/taskTrackingInfo/%s" % (project, ident), "trackingId": ident,
                   "state": task.get("state", "OPEN")}
            for field in ("taskOutcome", "taskOutcomeTime", "plannedLocation", "targetTimeWindow", "attributes",
                          "estimatedArrivalTime", "vehicleLocation"):
                if field in task:
                    out[field] = task[field]
            raise Reply(200, out, "ok")
        raise AssertionError(rpc)

    @staticmethod
    def not_found(kind, project, ident):
        return error(404, "not_found", "Requested entity was not found.",
                     "providers/%s/%s/%s does not exist" % (project, kind, ident))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--max-seconds", type=float, default=1800.0,
                        help="stop by itself after this many seconds (0: never)")
    parser.add_argument("--exit-on-stdin-eof", action="store_true",
                        help="stop when stdin reaches end of file (the parent went away)")
    parser.add_argument("--port-file",
                        help="also write the port to this file (written whole, then renamed into place)")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()

    state = State()
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
