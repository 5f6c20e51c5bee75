"""Fleet Engine IDs through the browser fetcher (issue 47): how it encodes them, and, against the real gateway, that
every legal ID arrives unchanged in its token's claim and every illegal one is refused.

The fetcher puts each ID in the query as UTF-8 with every byte outside `A-Z a-z 0-9 - . _ ~` percent-encoded, as the
Swift and Android clients do. The random IDs come from fleet_engine_ids.py (seeded; the run prints the seed).

The tests marked `fleet_engine_ids` need a gateway that accepts every legal ID (issue 47's decoding: a query
percent-decoded as UTF-8 with `+` read as a space); against one that still accepts only ASCII letters, digits and
`-_.~@+=` they fail, and `-m "not fleet_engine_ids"` leaves them out.
"""

import re

import pytest

from conftest import IDS_PROVIDER
from fleet_engine_ids import SEED, gateway_reading, illegal_ids, legal_ids
from test_browser_fetcher import TRIP

LEGAL = legal_ids(200)
ILLEGAL = illegal_ids()
ENCODED_QUERY = re.compile(r"^(?:[A-Za-z]+=(?:[A-Za-z0-9._~-]|%[0-9A-F]{2})*)(?:&[A-Za-z]+=(?:[A-Za-z0-9._~-]|%[0-9A-F]{2})*)*$")


def ids_fetcher(page, keys, **config):
    page.sessions(keys.ids_api_key)
    page.make("ids", provider=IDS_PROVIDER, **config)


def describe(index, trip_id):
    return "seed %d, ID #%d %r" % (SEED, index, trip_id)


@pytest.mark.parametrize("trip_id, query", [
    ("trip-42_a.b~c", "tripId=trip-42_a.b~c"),
    ("trip 42", "tripId=trip%2042"),                     # never `+`, which some servers read as a plus
    ("trip+42", "tripId=trip%2B42"),
    ("véhicule-Zürich-\U0001d49c", "tripId=v%C3%A9hicule-Z%C3%BCrich-%F0%9D%92%9C"),
    ("e\u0301", "tripId=e%CC%81"),                        # sent as given: the gateway judges NFC
    ("a&vehicleId=v/x?y#z,w:%", "tripId=a%26vehicleId%3Dv%2Fx%3Fy%23z%2Cw%3A%25"),
    ("!'()*", "tripId=%21%27%28%29%2A"),                  # what encodeURIComponent alone would leave as they are
    ("😀", "tripId=%F0%9F%98%80"),
])
def test_ids_are_percent_encoded_as_utf8_as_the_other_clients_encode_them(page, trip_id, query):
    page.make("rider", providerId="acme rides+é")
    result = page.run("route", "rider", TRIP, {"tripId": trip_id})
    assert result["ok"], result
    assert result["route"]["url"] == "%s/v1/providers/acme%%20rides%%2B%%C3%%A9/tokens/consumer?%s" % (
        page.gateway.url, query)
    assert page.requests() == []


def test_an_id_that_is_not_well_formed_unicode_is_refused_before_anything_is_sent(page):
    page.make("rider")
    lone_surrogate = [ord(c) for c in "trip-"] + [0xD835]
    result = page.run("routeFromCodeUnits", "rider", TRIP, "tripId", lone_surrogate)
    assert (result["ok"], result["error"]["code"], result["error"]["status"]) == (False, "invalid_request", 0), result
    assert page.requests() == []


def test_every_random_id_survives_the_encoding_as_the_gateway_decodes_it(page):
    # No gateway involved: the URL the fetcher would send, read back by the rule the gateway implements.
    page.make("rider")
    for index, trip_id in enumerate(LEGAL + [case for case, _ in ILLEGAL]):
        result = page.run("route", "rider", TRIP, {"tripId": trip_id})
        assert result["ok"], (describe(index, trip_id), result)
        query = result["route"]["url"].split("?", 1)[1]
        assert ENCODED_QUERY.match(query), (describe(index, trip_id), query)
        assert gateway_reading(query) == {"tripId": trip_id}, describe(index, trip_id)
    assert page.requests() == []


@pytest.mark.fleet_engine_ids
def test_random_legal_ids_arrive_unchanged_in_the_tokens_claim(page, keys):
    ids_fetcher(page, keys)
    results = page.run("fetchEach", "ids", TRIP, [{"tripId": trip_id} for trip_id in LEGAL])
    failures = []
    for index, (trip_id, result) in enumerate(zip(LEGAL, results)):
        if not result["ok"]:
            failures.append("%s: %s (%s)" % (describe(index, trip_id), result["code"], result["status"]))
            continue
        claims = keys.verify_fleet_engine_token(result["token"])           # signed by the provider's key
        if claims["authorization"] != {"tripid": trip_id} or result["tripid"] != trip_id:
            failures.append("%s: the claim is %r" % (describe(index, trip_id), claims["authorization"]))
    assert not failures, "%d of %d legal IDs:\n%s" % (len(failures), len(LEGAL), "\n".join(failures[:20]))
    assert len(page.requests()) == len(LEGAL)                             # one request each, none retried


def test_random_illegal_ids_are_refused_400_invalid_request(page, keys):
    ids_fetcher(page, keys)
    results = page.run("fetchEach", "ids", TRIP, [{"tripId": trip_id} for trip_id, _ in ILLEGAL])
    failures = ["%s, %s: %r" % (describe(index, trip_id), why, result)
                for index, ((trip_id, why), result) in enumerate(zip(ILLEGAL, results))
                if (result["ok"], result.get("code"), result.get("status")) != (False, "invalid_request", 400)]
    assert not failures, "%d of %d illegal IDs:\n%s" % (len(failures), len(ILLEGAL), "\n".join(failures[:20]))
    assert len(page.requests()) == len(ILLEGAL)                           # a 400 is never retried
