"""The error table of docs/client.md ("One error, three clients") for the browser fetcher, in Chromium, against the
real gateway: each case provoked for real where the gateway or the network can give it (a backend down, a circuit
open, a caller's hourly cap, a refused connection, a redirecting origin, a session that lost its trip), and a 503
played by the page's fetch only where it must come and go on cue.

Retries are counted in the page's own fetches; backoff is shortened with `initialBackoffMs` so the suite stays fast.
"""

import secrets

import pytest

from conftest import BREAKER_PROVIDER, CAPPED_PROVIDER, DOWN_PROVIDER, PROVIDER, unused_port
from test_browser_fetcher import TRIP, rider_session, token_requests


@pytest.mark.parametrize("answers", ["gateway", "proxy"])
def test_a_5xx_is_retried_with_backoff_and_then_the_token_is_returned(page, keys, answers):
    # The gateway's 503 body, or a proxy's 502 page without it (unexpected_status, judged by its status).
    page.sessions(rider_session(keys, "trip-flaky-" + answers))
    proxy = {"status": 502, "body": "<html>Bad gateway</html>"}
    page.make("rider", transform="unavailableTwice" if answers == "gateway" else {"script": [proxy, proxy]},
              initialBackoffMs=200)
    result = page.call("rider", TRIP, tripId="trip-flaky-" + answers)
    assert result["ok"], result
    assert result["check"] == "ok"
    assert len(token_requests(page)) == 3                              # 503, 503, then the gateway's token
    assert result["milliseconds"] >= (200 + 400) / 2                   # backoff: 200 ms then 400 ms, up to half less


def test_a_backend_that_stays_down_is_asked_three_times_then_its_503_surfaces(page, keys):
    page.sessions(rider_session(keys, "trip-down"))
    page.make("rider", provider=DOWN_PROVIDER, initialBackoffMs=20)
    result = page.call("rider", TRIP, tripId="trip-down")
    error = result["error"]
    assert (error["code"], error["status"]) == ("backend_unavailable", 503), error
    assert error["requestId"]
    assert len(token_requests(page)) == 3                              # maxAttempts
    # Nothing was cached, so nothing is served meanwhile: the next call asks again.
    again = page.call("rider", TRIP, tripId="trip-down")
    assert again["error"]["code"] == "backend_unavailable"
    assert len(token_requests(page)) == 6


def test_a_503_whose_retry_after_is_too_long_to_wait_surfaces_at_once(page, keys):
    # The first answer is the upstream's failure; it opens the provider's circuit for 10 s, so the retry is answered
    # 503 with a Retry-After of about 10 s: more than maxRetryWaitSeconds (5), so not waited for.
    page.sessions(rider_session(keys, "trip-breaker"))
    page.make("rider", provider=BREAKER_PROVIDER, initialBackoffMs=20)
    result = page.call("rider", TRIP, tripId="trip-breaker")
    error = result["error"]
    assert (error["code"], error["status"]) == ("backend_unavailable", 503), error
    assert 5 < error["retryAfter"] <= 10, error
    assert len(token_requests(page)) == 2
    assert result["milliseconds"] < 3000
    # A 5xx's Retry-After does not cool the route down (only a 429's does): the next call asks again, once.
    again = page.call("rider", TRIP, tripId="trip-breaker")
    assert again["error"]["code"] == "backend_unavailable" and again["error"]["retryAfter"] > 5
    assert len(token_requests(page)) == 3


def test_no_answer_is_retried_then_surfaces_as_a_network_error(page, keys):
    page.sessions(rider_session(keys, "trip-nowhere"))
    page.make("rider", baseUrl="http://127.0.0.1:%d" % unused_port(), initialBackoffMs=20)
    result = page.call("rider", TRIP, tripId="trip-nowhere")
    assert (result["error"]["code"], result["error"]["status"]) == ("network_error", 0), result
    assert len(token_requests(page)) == 3


def test_a_request_without_an_answer_in_time_is_retried_then_surfaces_as_a_timeout(page, keys):
    page.sessions(rider_session(keys, "trip-slow"))
    page.make("rider", baseUrl=page.origin + "/slow", timeoutMs=300, initialBackoffMs=20)
    result = page.call("rider", TRIP, tripId="trip-slow")
    assert (result["error"]["code"], result["error"]["status"]) == ("timeout", 0), result
    assert len(token_requests(page)) == 3
    assert result["milliseconds"] >= 900                               # three times 300 ms


def test_a_redirect_is_never_followed_nor_retried(page, gateway, keys, origins):
    # A proxy or a wrong base URL that redirects: the request carries the user's credential, so it stops here.
    page.sessions(rider_session(keys, "trip-redirected"))
    redirecting = origins["servers"]["allowed"]
    before = redirecting.redirects
    served = gateway.counter("tokengate_tokens_served_total", provider=PROVIDER)
    page.make("rider", baseUrl=page.origin + "/redirect", initialBackoffMs=20)
    result = page.call("rider", TRIP, tripId="trip-redirected")
    assert result["error"]["code"] == "invalid_response", result
    assert redirecting.redirects == before + 1
    assert len(token_requests(page)) == 1
    assert gateway.counter("tokengate_tokens_served_total", provider=PROVIDER) == served


@pytest.mark.parametrize("refusal", ["forbidden", "unauthenticated"])
def test_a_refusal_drops_the_cached_token_and_is_not_retried(page, keys, refusal):
    trip = "trip-refused-%s" % refusal
    page.sessions(rider_session(keys, trip))
    page.make("rider", clock={"kind": "manual"})
    first = page.call("rider", TRIP, tripId=trip)
    assert first["ok"], first
    # The user is taken off the trip (403), or their login expires (401), while the page holds the token.
    if refusal == "forbidden":
        page.sessions(rider_session(keys, "another-trip"))
    else:
        page.sessions(keys.session(subject="rider-7", issued_ago=3720, lifetime=3600, trip_ids=[trip]))
    page.run("advance", "rider", first["cached"]["refreshAtLocal"] - page.run("clockOf", "rider") + 1000)
    refused = page.call("rider", TRIP, tripId=trip)
    assert refused["error"]["code"] == refusal, refused
    assert page.run("peek", "rider", TRIP, {"tripId": trip}) is None
    assert len(token_requests(page)) == 2
    # Not remembered as an ended trip is: the next call asks again (a refreshed login would get a token).
    again = page.call("rider", TRIP, tripId=trip)
    assert again["error"]["code"] == refusal
    assert len(token_requests(page)) == 3


def test_a_long_retry_after_cools_the_route_down_while_the_cached_token_serves(page, keys):
    # browser-capped allows each caller one token an hour: the second is 429 with a Retry-After of up to an hour.
    page.sessions(keys.session(subject="rider-capped-" + secrets.token_hex(4), trip_ids=["trip-c1", "trip-c2"]))
    page.make("rider", provider=CAPPED_PROVIDER, clock={"kind": "manual"})
    first = page.call("rider", TRIP, tripId="trip-c1")
    assert first["ok"], first

    limited = page.call("rider", TRIP, tripId="trip-c2")
    assert (limited["error"]["code"], limited["error"]["status"]) == ("rate_limited", 429), limited
    assert 5 < limited["error"]["retryAfter"] <= 3600
    cooling = page.call("rider", TRIP, tripId="trip-c2")
    assert cooling["error"]["code"] == "rate_limited" and cooling["error"]["retryAfter"] <= limited["error"]["retryAfter"]
    assert len(token_requests(page)) == 2                              # not asked again before Retry-After

    # The first trip's refresh meets the same cap: its still-valid token is served, and the route cools down too.
    cached = first["cached"]
    page.run("advance", "rider", cached["refreshAtLocal"] - page.run("clockOf", "rider") + 1000)
    refreshed = page.call("rider", TRIP, tripId="trip-c1")
    assert refreshed["ok"] and refreshed["token"] == first["token"]
    assert len(token_requests(page)) == 3
    page.run("advance", "rider", 60000)
    assert page.call("rider", TRIP, tripId="trip-c1")["token"] == first["token"]
    assert len(token_requests(page)) == 3
    # Below minRemainingSeconds (120) the cooldown's 429 is the answer, still without a request.
    page.run("advance", "rider", cached["expiresAtLocal"] - page.run("clockOf", "rider") - 119000)
    late = page.call("rider", TRIP, tripId="trip-c1")
    assert (late["error"]["code"], late["error"]["status"]) == ("rate_limited", 429), late
    assert len(token_requests(page)) == 3


@pytest.mark.parametrize("status, code", [(400, "invalid_request"), (404, "unknown_provider"),
                                          (404, "no_token_for_context")])
def test_every_refusal_by_status_drops_the_cached_token(page, keys, status, code):
    # Answers the gateway gives for a misconfigured page or tenant, not on cue: played by the page's fetch.
    trip = "trip-refused-%d-%s" % (status, code)
    page.sessions(rider_session(keys, trip))
    answer = {"status": status, "code": code}
    page.make("rider", clock={"kind": "manual"}, transform={"script": [None, answer, answer]})
    first = page.call("rider", TRIP, tripId=trip)
    assert first["ok"], first
    page.run("advance", "rider", first["cached"]["refreshAtLocal"] - page.run("clockOf", "rider") + 1000)
    refused = page.call("rider", TRIP, tripId=trip)
    assert (refused["error"]["code"], refused["error"]["status"]) == (code, status), refused
    assert page.run("peek", "rider", TRIP, {"tripId": trip}) is None
    again = page.call("rider", TRIP, tripId=trip)
    assert again["error"]["code"] == code
    assert len(token_requests(page)) == 3                              # never retried


def test_a_token_expired_on_receipt_is_an_invalid_response_and_is_not_retried(page, keys):
    page.sessions(rider_session(keys, "trip-stale"))
    stale = '{"token": "a.b.c", "issuedAt": 1795291871, "expiresAt": 1795295471, "expiresIn": 0}'
    page.make("rider", transform={"script": [{"status": 200, "body": stale}]})
    result = page.call("rider", TRIP, tripId="trip-stale")
    assert (result["error"]["code"], result["error"]["status"]) == ("invalid_response", 200), result
    assert len(token_requests(page)) == 1


def test_a_503s_short_retry_after_is_waited_exactly(page, keys):
    page.sessions(rider_session(keys, "trip-wait"))
    page.make("rider", initialBackoffMs=20,
              transform={"script": [{"status": 503, "code": "backend_unavailable", "retryAfter": 1}]})
    result = page.call("rider", TRIP, tripId="trip-wait")
    assert result["ok"], result
    assert len(token_requests(page)) == 2
    assert result["milliseconds"] >= 950                               # the second, not the 20 ms backoff


@pytest.mark.parametrize("failure", ["unusable-answer", "credential"])
def test_a_failure_that_is_no_refusal_leaves_the_cached_token_in_service(page, keys, failure):
    trip = "trip-kept-%s" % failure
    page.sessions(rider_session(keys, trip))
    portal = {"status": 200, "body": "<html>captive portal</html>"}
    page.make("rider", clock={"kind": "manual"},
              transform={"script": [None, portal, portal]} if failure == "unusable-answer" else None)
    first = page.call("rider", TRIP, tripId=trip)
    assert first["ok"], first
    if failure == "credential":
        page.sessions("THROW")                                         # the session store fails from now on
    sent = 2 if failure == "unusable-answer" else 1                     # nothing is sent without a credential
    page.run("advance", "rider", first["cached"]["refreshAtLocal"] - page.run("clockOf", "rider") + 1000)
    kept = page.call("rider", TRIP, tripId=trip)
    assert kept["ok"] and kept["token"] == first["token"], kept
    assert len(token_requests(page)) == sent                            # not retried
    page.run("advance", "rider", first["cached"]["expiresAtLocal"] - page.run("clockOf", "rider") - 119000)
    late = page.call("rider", TRIP, tripId=trip)
    expected = "invalid_response" if failure == "unusable-answer" else "credential_unavailable"
    assert late["error"]["code"] == expected, late
    assert len(token_requests(page)) == (3 if failure == "unusable-answer" else 1)
