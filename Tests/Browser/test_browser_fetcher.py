"""Client/JavaScript/tokengate-fetcher.js in a real Chromium, against the real gateway and its CORS.

The page (page/index.html) imports the module from its own origin and calls the fetcher exactly as Fleet Engine's
JavaScript libraries call an `authTokenFetcher`: `{serviceType, context}` in, `{token, expiresInSeconds}` out. The
page counts its own fetches (window.fetch wrapped) and decodes each token's claims; the test checks the
signatures, the gateway's metrics and audit log, and what Chromium's DevTools saw on the network.

Run: TOKENGATE_BINARY=.build/debug/tokengate python3 -m pytest -q -p no:cacheprovider Tests/Browser
(conftest.py says what runs where.)
"""

import time

import pytest

from conftest import LIMITED_PROVIDER, PROVIDER

# Fleet Engine's JavaScript libraries pass google.maps.journeySharing.FleetEngineServiceType values.
TRIP, VEHICLE, DELIVERY_VEHICLE, TASK, UNKNOWN = (
    "TRIP_SERVICE", "VEHICLE_SERVICE", "DELIVERY_VEHICLE_SERVICE", "TASK_SERVICE", "UNKNOWN_SERVICE")
TEN_MINUTES_MS = 10 * 60 * 1000


def rider_session(keys, *trips, **claims):
    return keys.session(subject="rider-7", trip_ids=list(trips), **claims)


def token_requests(page):
    """The token requests the page made (its fetches to the gateway's token routes)."""
    return [entry["url"] for entry in page.requests() if "/tokens/" in entry["url"]]


def true_remaining(claims):
    """Seconds the token really has left, on the gateway's (this machine's) clock."""
    return claims["exp"] - time.time()


def preflights(events):
    """{url: status} of the CORS preflights Chromium sent, and the URLs it sent OPTIONS to."""
    sent = {params["request"]["url"] for method, params in events
            if method == "Network.requestWillBeSent" and params["request"]["method"] == "OPTIONS"}
    answered = {params["response"]["url"]: params["response"]["status"] for method, params in events
                if method == "Network.responseReceived" and params.get("type") == "Preflight"}
    return sent, answered


def expected_clock_source(gateway, page):
    """`date` when the gateway lets a listed origin read Date, else the body's `expiresAt - expiresIn`."""
    return "date" if "date" in gateway.exposed_headers(page.origin) else "expiresIn"


# --- CORS: through the preflight from a listed origin, refused by the browser from any other ----------------------

def test_listed_origin_gets_consumer_driver_and_delivery_tokens_through_the_preflight(page, gateway, keys):
    page.sessions(keys.session(
        subject="user-1", trip_ids=["trip-1"], shipment_ids=["track-1", "task-1"], vehicle_ids=["vehicle-7"],
        delivery_vehicle_ids=["van-3"]))
    page.make("rider", role="consumer")
    page.make("driver", role="driver")
    page.make("ops", role="fleet")
    page.make("depot", role="delivery-fleet")
    calls = [
        ("rider", TRIP, {"tripId": "trip-1"}, "consumer", {"tripid": "trip-1"}),
        ("rider", TASK, {"trackingId": "track-1"}, "delivery-consumer", {"trackingid": "track-1"}),
        ("rider", TASK, {"taskId": "task-1"}, "delivery-consumer", {"taskid": "task-1"}),
        ("driver", VEHICLE, {"vehicleId": "vehicle-7"}, "driver", {"vehicleid": "vehicle-7"}),
        ("driver", DELIVERY_VEHICLE, {"deliveryVehicleId": "van-3"}, "delivery-driver",
         {"deliveryvehicleid": "van-3"}),
        ("ops", UNKNOWN, {}, "fleet-reader",
         {"tripid": "*", "vehicleid": "*", "taskid": "*", "trackingid": "*", "deliveryvehicleid": "*"}),
        ("depot", DELIVERY_VEHICLE, {"deliveryVehicleId": "van-3"}, "delivery-fleet-reader",
         {"taskid": "*", "trackingid": "*", "deliveryvehicleid": "*"}),
    ]
    urls = []
    for name, service_type, context, token_type, authorization in calls:
        result = page.call(name, service_type, **context)
        assert result["ok"], (name, service_type, context, result)
        assert result["tokenType"] == token_type
        assert result["check"] == "ok", result["check"]                 # the page's own reading of the claims
        assert result["keys"] == ["expiresInSeconds", "token"]          # exactly what Fleet Engine's library reads
        claims = keys.verify_fleet_engine_token(result["token"])        # signed by the provider's key
        assert claims["authorization"] == authorization
        assert isinstance(result["expiresInSeconds"], int)
        # Seconds, not milliseconds: at most the token's life, within 3 s of what it really has left.
        assert 0 < result["expiresInSeconds"] <= claims["exp"] - claims["iat"]
        assert abs(result["expiresInSeconds"] - true_remaining(claims)) <= 3
        urls.append(result["route"])
    assert token_requests(page) == urls                                # one request per context
    sent, answered = preflights(page.network_events())
    assert set(urls) <= sent, "Chromium sent no preflight for %s" % (set(urls) - sent)
    assert {url: answered.get(url) for url in urls} == {url: 204 for url in urls}


def test_unlisted_origin_is_refused_by_the_browser_and_nothing_is_minted(page, gateway, keys, origins):
    page.open(origins["other"])                      # the same page from an origin the provider does not list
    assert '"%s"' % page.origin not in gateway.config_path.read_text()
    page.sessions(rider_session(keys, "trip-elsewhere"))
    page.make("rider")
    served = gateway.counter("tokengate_tokens_served_total", provider=PROVIDER)
    minted = gateway.counter("tokengate_backend_calls_total", provider=PROVIDER)
    refused = gateway.counter("tokengate_denials_total", provider=PROVIDER, code="origin_not_allowed")
    audit_lines = len(gateway.audit())

    result = page.call("rider", TRIP, tripId="trip-elsewhere")

    assert not result["ok"]
    assert result["error"]["code"] == "network_error" and result["error"]["status"] == 0, result
    # The browser says no more than a lost network would, so the fetcher tried maxAttempts (3) times; no more.
    assert len(token_requests(page)) == 3
    assert any("CORS policy" in line for line in page.console()), page.console()
    sent, answered = preflights(page.network_events())
    assert answered == {result["route"]: 403}                         # origin_not_allowed, and no GET followed
    # The gateway refused the preflight and minted, served and audited nothing.
    assert gateway.counter("tokengate_denials_total", provider=PROVIDER, code="origin_not_allowed") == refused + 3
    assert gateway.counter("tokengate_tokens_served_total", provider=PROVIDER) == served
    assert gateway.counter("tokengate_backend_calls_total", provider=PROVIDER) == minted
    assert len(gateway.audit()) == audit_lines
    assert not any(line["context"].get("tripId") == "trip-elsewhere" for line in gateway.audit())


# --- the fetcher's cache ------------------------------------------------------------------------------------------

def test_a_token_is_reused_without_a_second_request(page, gateway, keys):
    page.sessions(rider_session(keys, "trip-reuse"))
    page.make("rider")
    served = gateway.counter("tokengate_tokens_served_total", provider=PROVIDER, token_type="consumer")
    first = page.call("rider", TRIP, tripId="trip-reuse")
    second = page.call("rider", TRIP, tripId="trip-reuse")
    assert first["ok"] and second["ok"]
    assert second["token"] == first["token"]
    assert 0 <= first["expiresInSeconds"] - second["expiresInSeconds"] <= 1
    assert len(token_requests(page)) == 1
    assert gateway.counter("tokengate_tokens_served_total", provider=PROVIDER, token_type="consumer") == served + 1


def test_ten_concurrent_calls_make_one_request(page, gateway, keys):
    page.sessions(rider_session(keys, "trip-ten"))
    page.make("rider")
    served = gateway.counter("tokengate_tokens_served_total", provider=PROVIDER, token_type="consumer")
    results = page.run("callMany", "rider", 10, TRIP, {"tripId": "trip-ten"})
    assert all(result["ok"] for result in results), results
    assert len({result["token"] for result in results}) == 1
    assert token_requests(page) == [results[0]["route"]]
    assert gateway.counter("tokengate_tokens_served_total", provider=PROVIDER, token_type="consumer") == served + 1
    assert [line["context"] for line in gateway.audit()].count({"tripId": "trip-ten"}) == 1


def test_the_token_is_asked_for_again_after_refresh_after(page, gateway, keys):
    page.sessions(rider_session(keys, "trip-refresh"))
    page.make("rider", clock={"kind": "manual"})
    first = page.call("rider", TRIP, tripId="trip-refresh")
    assert first["ok"]
    cached = first["cached"]
    # The gateway's refreshAfter (10 minutes before expiry by default), on the page's clock.
    assert cached["refreshAfter"] == first["claims"]["exp"] - 600
    assert abs((cached["expiresAtLocal"] - cached["refreshAtLocal"]) / 1000 - 600) < 0.001
    start = page.run("clockOf", "rider")

    page.run("advance", "rider", cached["refreshAtLocal"] - start - 1000)       # one second before refreshAfter
    before = page.call("rider", TRIP, tripId="trip-refresh")
    assert before["ok"] and before["token"] == first["token"]
    assert len(token_requests(page)) == 1
    assert 600 <= before["expiresInSeconds"] <= 602                            # its own clock says 10 min are left

    page.run("advance", "rider", 2000)                                        # one second past it
    after = page.call("rider", TRIP, tripId="trip-refresh")
    assert after["ok"]
    assert len(token_requests(page)) == 2                                     # asked again
    # The gateway still holds the same token (its own clock is 50 minutes behind the page's): the fetcher takes
    # the gateway's word for the time, so the token keeps its real remaining life and is not asked for again.
    assert abs(after["expiresInSeconds"] - true_remaining(after["claims"])) <= 3
    again = page.call("rider", TRIP, tripId="trip-refresh")
    assert again["ok"] and len(token_requests(page)) == 2


def test_a_failed_refresh_keeps_the_valid_token_until_too_little_of_it_is_left(page, keys):
    page.sessions(rider_session(keys, "trip-offline"))
    page.make("rider", clock={"kind": "manual"}, transform="offlineAfterFirst", initialBackoffMs=10)
    first = page.call("rider", TRIP, tripId="trip-offline")
    assert first["ok"]
    cached = first["cached"]
    page.run("advance", "rider", cached["refreshAtLocal"] - page.run("clockOf", "rider") + 1000)
    offline = page.call("rider", TRIP, tripId="trip-offline")        # the refresh fails: the token still has 10 min
    assert offline["ok"] and offline["token"] == first["token"]
    assert 590 <= offline["expiresInSeconds"] <= 600
    assert len(token_requests(page)) == 4                             # three attempts (maxAttempts)
    page.run("advance", "rider", 20000)                               # within retryIntervalSeconds (30) of it
    paced = page.call("rider", TRIP, tripId="trip-offline")
    assert paced["ok"] and paced["token"] == first["token"]
    assert len(token_requests(page)) == 4                             # not asked again
    # With less than minRemainingSeconds (120) left, the failure is the answer.
    page.run("advance", "rider", cached["expiresAtLocal"] - page.run("clockOf", "rider") - 119000)
    failed = page.call("rider", TRIP, tripId="trip-offline")
    assert (failed["error"]["code"], failed["error"]["status"]) == ("network_error", 0), failed
    assert len(token_requests(page)) == 7


# --- errors -------------------------------------------------------------------------------------------------------

def test_context_ended_is_reported_after_the_operator_ends_the_trip_and_never_retried(page, gateway, keys):
    page.sessions(rider_session(keys, "trip-ended"))
    page.make("rider", clock={"kind": "manual"})
    first = page.call("rider", TRIP, tripId="trip-ended")
    assert first["ok"]

    ended = gateway.end_context("consumer", "trip-ended")
    assert ended["ended"] is True
    # Until its refresh time the page keeps the token it holds (Fleet Engine has no revocation either).
    assert page.call("rider", TRIP, tripId="trip-ended")["token"] == first["token"]
    assert len(token_requests(page)) == 1

    page.run("advance", "rider", first["cached"]["refreshAtLocal"] - page.run("clockOf", "rider") + 1000)
    refused = page.call("rider", TRIP, tripId="trip-ended")
    assert not refused["ok"]
    error = refused["error"]
    assert (error["name"], error["code"], error["status"]) == ("TokenGateError", "context_ended", 410), error
    assert error["requestId"]                                          # X-Request-ID is exposed to the page
    assert len(token_requests(page)) == 2                              # one request, no retry
    assert page.run("peek", "rider", TRIP, {"tripId": "trip-ended"}) is None     # the cached token is dropped
    again = page.call("rider", TRIP, tripId="trip-ended")
    assert again["error"]["code"] == "context_ended"
    assert "remembered" in again["error"]["message"]
    assert len(token_requests(page)) == 2                              # not even asked again
    assert [line["context"] for line in gateway.audit()].count({"tripId": "trip-ended"}) == 1


def test_forbidden_and_unauthenticated_are_errors_with_code_and_status_and_a_new_login_is_used(page, keys):
    page.sessions(rider_session(keys, "trip-mine"))
    page.make("rider")
    forbidden = page.call("rider", TRIP, tripId="trip-not-mine")
    assert not forbidden["ok"]
    assert (forbidden["error"]["code"], forbidden["error"]["status"]) == ("forbidden", 403)
    assert len(token_requests(page)) == 1                              # never retried

    # An expired login: 401, retried once only when credential() then gives another session token.
    expired = keys.session(subject="rider-7", issued_ago=3720, lifetime=3600, trip_ids=["trip-mine"])
    page.sessions(expired)
    unauthenticated = page.call("rider", TRIP, tripId="trip-mine")
    assert (unauthenticated["error"]["code"], unauthenticated["error"]["status"]) == ("unauthenticated", 401)
    assert len(token_requests(page)) == 2
    page.sessions(expired, rider_session(keys, "trip-mine"))          # the app's login refreshes in between
    renewed = page.call("rider", TRIP, tripId="trip-mine")
    assert renewed["ok"], renewed
    assert len(token_requests(page)) == 4

    # A rider page never asks for a vehicle's token: refused before anything is sent.
    vehicle = page.call("rider", VEHICLE, vehicleId="vehicle-7")
    assert (vehicle["error"]["code"], vehicle["error"]["status"]) == ("unsupported_context", 0)
    assert len(token_requests(page)) == 4


def test_rate_limited_is_retried_once_after_a_short_retry_after_and_surfaced_after_a_long_one(page, keys):
    # browser-limited allows one token request per context, then one a second (60/min, burst 1).
    page.sessions(rider_session(keys, "trip-busy"))
    for name, wait in (("first", None), ("patient", None), ("impatient", 0)):
        page.make(name, provider=LIMITED_PROVIDER, **({} if wait is None else {"maxRetryWaitSeconds": wait}))
    assert page.call("first", TRIP, tripId="trip-busy")["ok"]

    # Refused with Retry-After: 1 at once; the fetcher waits that second and asks once more.
    patient = page.call("patient", TRIP, tripId="trip-busy")
    assert patient["ok"], patient
    assert patient["milliseconds"] >= 900
    assert len(token_requests(page)) == 3

    # With no wait allowed the 429 is surfaced with its Retry-After, and the route is not asked again before then.
    impatient = page.call("impatient", TRIP, tripId="trip-busy")
    error = impatient["error"]
    assert (error["code"], error["status"]) == ("rate_limited", 429), error
    assert error["retryAfter"] >= 1
    assert len(token_requests(page)) == 4
    waiting = page.call("impatient", TRIP, tripId="trip-busy")
    assert waiting["error"]["code"] == "rate_limited" and waiting["error"]["retryAfter"] >= 1
    assert len(token_requests(page)) == 4
    time.sleep(error["retryAfter"] + 0.2)
    assert page.call("impatient", TRIP, tripId="trip-busy")["ok"]
    assert len(token_requests(page)) == 5


# --- the clock ----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("skew_ms", [TEN_MINUTES_MS, -TEN_MINUTES_MS], ids=["page-10min-ahead", "page-10min-behind"])
@pytest.mark.parametrize("how", ["injected-now", "page-Date-now"])
def test_expires_in_seconds_is_right_on_a_page_whose_clock_is_ten_minutes_off(page, gateway, keys, skew_ms, how):
    trip = "trip-skew-%s-%d" % (how, skew_ms)
    page.sessions(rider_session(keys, trip))
    if how == "injected-now":
        page.make("rider", clock={"kind": "offset", "ms": skew_ms})
    else:
        page.run("skewDateNow", skew_ms)                              # every Date.now() of the page is off
        page.make("rider")
    result = page.call("rider", TRIP, tripId=trip)
    page.run("restoreDateNow")
    assert result["ok"], result
    remaining = true_remaining(result["claims"])
    assert abs(result["expiresInSeconds"] - remaining) <= 3
    # The naive reading, expiresAt against the page's own clock, is ten minutes off, one way or the other.
    naive = result["claims"]["exp"] - (time.time() + skew_ms / 1000)
    assert abs(naive - result["expiresInSeconds"]) > 590
    assert result["cached"]["clockSource"] == expected_clock_source(gateway, page)
    assert abs(result["cached"]["clockOffsetMs"] + skew_ms) < 3000


def test_the_clock_is_read_from_date_when_the_browser_may_read_it(page, keys):
    # What a page on the gateway's own origin, or a gateway that exposes Date, gives the fetcher.
    page.sessions(rider_session(keys, "trip-dated"))
    page.make("rider", clock={"kind": "offset", "ms": -TEN_MINUTES_MS}, transform="date")
    result = page.call("rider", TRIP, tripId="trip-dated")
    assert result["ok"], result
    assert result["cached"]["clockSource"] == "date"
    assert abs(result["expiresInSeconds"] - true_remaining(result["claims"])) <= 3


@pytest.mark.parametrize("skew_ms", [TEN_MINUTES_MS, -TEN_MINUTES_MS], ids=["page-10min-ahead", "page-10min-behind"])
def test_with_issued_at_alone_the_life_is_never_overstated_beyond_the_tokens_age(page, keys, skew_ms):
    trip = "trip-issued-%d" % skew_ms
    page.sessions(rider_session(keys, trip))
    page.make("rider", clock={"kind": "offset", "ms": skew_ms}, transform="issuedAtOnly")
    result = page.call("rider", TRIP, tripId=trip)
    assert result["ok"], result
    assert result["cached"]["clockSource"] == "issuedAt"
    remaining = true_remaining(result["claims"])
    age = time.time() - result["claims"]["iat"]
    if skew_ms < 0:
        # The page is behind: moved forward to issuedAt, off by the token's age at most (fresh here: seconds).
        assert -3 <= result["expiresInSeconds"] - remaining <= age + 2
    else:
        # The page is ahead: issuedAt says nothing against it, so the life is understated by the skew, never over.
        assert abs(result["expiresInSeconds"] - (remaining - skew_ms / 1000)) <= 3


# --- the mapping table of docs/client.md --------------------------------------------------------------------------

ROUTES = [
    ("consumer", TRIP, {"tripId": "t1"}, ("consumer", {"tripId": "t1"})),
    ("consumer", VEHICLE, {"tripId": "t1", "vehicleId": "v1"}, ("consumer", {"tripId": "t1"})),
    ("consumer", TASK, {"trackingId": "s1"}, ("delivery-consumer", {"trackingId": "s1"})),
    ("consumer", DELIVERY_VEHICLE, {"trackingId": "s1", "deliveryVehicleId": "d1"},
     ("delivery-consumer", {"trackingId": "s1"})),
    ("consumer", TASK, {"taskId": "k1"}, ("delivery-consumer", {"taskId": "k1"})),
    ("consumer", VEHICLE, {"vehicleId": "v1"}, "unsupported_context"),
    ("consumer", DELIVERY_VEHICLE, {"deliveryVehicleId": "d1"}, "unsupported_context"),
    ("consumer", UNKNOWN, {}, "unsupported_context"),
    ("consumer", TRIP, {"tripId": ""}, "unsupported_context"),           # an empty ID counts as none
    ("driver", VEHICLE, {"vehicleId": "v1"}, ("driver", {"vehicleId": "v1"})),
    ("driver", TRIP, {"tripId": "t1", "vehicleId": "v1"}, ("driver", {"vehicleId": "v1"})),
    ("driver", DELIVERY_VEHICLE, {"deliveryVehicleId": "d1"}, ("delivery-driver", {"deliveryVehicleId": "d1"})),
    ("driver", TASK, {"deliveryVehicleId": "d1", "vehicleId": "v1"},
     ("delivery-driver", {"deliveryVehicleId": "d1"})),
    ("driver", TRIP, {"tripId": "t1"}, "unsupported_context"),
    ("fleet", VEHICLE, {"vehicleId": "v1"}, ("fleet-reader", {})),
    ("fleet", TRIP, {}, ("fleet-reader", {})),
    ("delivery-fleet", TASK, {"taskId": "k1"}, ("delivery-fleet-reader", {})),
    ("delivery-fleet", DELIVERY_VEHICLE, {}, ("delivery-fleet-reader", {})),
]


def test_service_types_map_to_the_documented_routes(page):
    for role, service_type, context, expected in ROUTES:
        result = page.run("routeFor", role, service_type, context)
        if expected == "unsupported_context":
            assert not result["ok"] and result["error"]["code"] == "unsupported_context", (role, context, result)
        else:
            assert result["ok"], (role, context, result)
            assert (result["route"]["tokenType"], result["route"]["parameters"]) == expected, (role, context)
    assert page.requests() == []
