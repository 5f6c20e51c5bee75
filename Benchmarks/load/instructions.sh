#!/usr/bin/env bash
# Instructions per request: the gateway's paths counted by valgrind's callgrind, next to two bare SwiftNIO servers'
# (bare-nio; plain-nio, the plainest) and the bare Hummingbird route's answer of the same body, and a traced
# gateway's hit for a caller whose traceparent is not sampled (issue 49: it must cost what an untraced hit does). Instruction counts do not drift with the machine as CPU time does
# (the rounds of one run.sh spread by 20-50 %), so a change to a path shows here as a number that moves by itself.
#
# Each server runs under callgrind on 127.0.0.1 with run.sh's configuration; a Python client sends REQUESTS requests
# one after another on one keep-alive connection (MINTS for the cold mint), after a warm-up, between a zeroing and a
# dump of the counters (callgrind_control). User-space instructions of every thread of the server are counted: the
# kernel's share (socket reads and writes) is not, and the client's is its own. The mint's signature is counted
# apart: the inclusive cost of OpenSSL's EVP_PKEY_sign (the RSA operation; the SHA-256 before it is small) in the
# same dump, so "mint over signature" is the gateway's
# whole mint (query, admission, claims, base64url, its own check of the token, caching, the answer) over the RSA
# signature at its heart.
#
# Usage: Benchmarks/load/instructions.sh
# Environment (all optional):
#   REQUESTS=2000        requests counted per path (hits and denials)
#   MINTS=200            mints counted, each a new trip
#   SKIP_BUILD=1         build only the release binaries that are missing
#   TOKENGATE=PATH       the gateway binary to count (never built then)
#   KEEP_WORK=1          keep the scratch directory (configuration, logs, callgrind's dumps) for callgrind_annotate
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
REQUESTS="${REQUESTS:-2000}"
MINTS="${MINTS:-200}"
HOST=127.0.0.1
PROVIDER=load-fleet
START_SECONDS=120

. "$(dirname "$0")/lib.sh"

need valgrind valgrind
need binutils objcopy
need gcc cc
for tool in callgrind_control callgrind_annotate curl python3 openssl; do command -v "$tool" >/dev/null || die "$tool is missing"; done
python3 -c 'import cryptography' 2>/dev/null || die "python3 needs the cryptography package (pip install cryptography)"
release_binaries

WORK="$(mktemp -d "${TMPDIR:-/tmp}/tokengate-instructions.XXXXXX")"
PIDS=()
cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    if [[ -n ${KEEP_WORK:-} ]]; then log "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

write_load_config

# The gateway's async main needs dispatch_main() replaced under valgrind (see the file).
cc -shared -fPIC -O2 -o "$WORK/dispatch_main.so" "$ROOT/Benchmarks/load/callgrind/dispatch_main.c" ||
    die "could not build Benchmarks/load/callgrind/dispatch_main.c"

# under_callgrind NAME BINARY ARGS...: starts a copy of BINARY under callgrind, its dumps in $WORK/NAME.cg.*; sets
# PORT and PID. The copy has no DWARF sections (its symbols stay): valgrind 3.19 gives up on a Swift release build's.
# The bare servers run one event loop, as in run.sh; the gateway runs its own (one per usable CPU).
under_callgrind() {
    local name=$1 binary=$2
    shift 2
    objcopy --strip-debug "$binary" "$WORK/$name.bin" || die "could not copy $binary without its debug sections"
    LD_PRELOAD="$WORK/dispatch_main.so" start "$name" "$WORK/$name.out" \
        valgrind --tool=callgrind --callgrind-out-file="$WORK/$name.cg" "$WORK/$name.bin" "$@"
}
under_callgrind gateway "$TOKENGATE" serve --config "$WORK/config.yaml" --port 0 --admin-port 0 --log-level info
GATEWAY_PID=$PID GATEWAY="http://$HOST:$PORT"
TOKEN_PATH="/v1/providers/$PROVIDER/tokens/consumer"
# The first request mints; the bare servers answer a body of its size.
BODY_BYTES="$(curl -sS --max-time 60 -o /dev/null -w '%{size_download}' -H "Authorization: Bearer $API_KEY" \
    "$GATEWAY$TOKEN_PATH?tripId=trip-1")"
under_callgrind bare-nio "$BARE_NIO" --port 0 --size "$BODY_BYTES"
NIO_PID=$PID NIO="http://$HOST:$PORT"
under_callgrind plain-nio "$PLAIN_NIO" --port 0 --size "$BODY_BYTES"
PLAIN_PID=$PID PLAIN="http://$HOST:$PORT"
# Traced at 1 in 100, exporting to a port nobody listens on: the counted requests are all unsampled, none exports.
cat "$WORK/config.yaml" - >"$WORK/traced.yaml" <<EOF
tracing:
  otlp: { endpoint: http://$HOST:9/v1/traces }
  sampleRatio: 0.01
EOF
under_callgrind traced "$TOKENGATE" serve --config "$WORK/traced.yaml" --port 0 --admin-port 0 --log-level info
TRACED_PID=$PID TRACED="http://$HOST:$PORT"
under_callgrind bare-route "$BARE_ROUTE" --port 0 --event-loops 1 --size "$BODY_BYTES"
BARE_PID=$PID BARE="http://$HOST:$PORT"

prime_denials "$GATEWAY"

# send URL BEARER STATUS COUNT [TRIP_PREFIX]: COUNT GETs of URL (?tripId=trip-1, or PREFIX1, PREFIX2, ...) on one
# keep-alive connection, one after another, with $TRACEPARENT when set; each answer must have STATUS (dies otherwise).
send() {
    python3 - "$@" <<'EOF'
import http.client, os, sys, urllib.parse
url, bearer, status, count = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
prefix = sys.argv[5] if len(sys.argv) > 5 else None
parts = urllib.parse.urlsplit(url)
connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=120)
headers = {"Authorization": "Bearer " + bearer} if bearer else {}
if os.environ.get("TRACEPARENT"):
    headers["traceparent"] = os.environ["TRACEPARENT"]
for i in range(1, count + 1):
    trip = f"{prefix}{i}" if prefix else "trip-1"
    connection.request("GET", f"{parts.path}?tripId={trip}", headers=headers)
    response = connection.getresponse()
    response.read()
    if response.status != status:
        sys.exit(f"{url}: answer {i} was {response.status}, not {status}")
EOF
}

# count NAME PID URL BEARER STATUS COUNT [TRIP_PREFIX]: warms the path (a tenth of COUNT, other trips for a mint),
# zeroes PID's counters, sends COUNT requests and dumps them; the dump's file name goes to $WORK/NAME.dump.
count() {
    local name=$1 pid=$2 url=$3 bearer=$4 status=$5 requests=$6 prefix=${7:-} before
    send "$url" "$bearer" "$status" $((requests / 10 + 1)) ${prefix:+"warm-$prefix"}
    callgrind_control -z "$pid" >/dev/null
    send "$url" "$bearer" "$status" "$requests" ${prefix:+"$prefix"}
    before="$(ls "$WORK"/*.cg.* 2>/dev/null | sort)" || true
    callgrind_control -d "$pid" >/dev/null
    comm -13 <(echo "$before") <(ls "$WORK"/*.cg.* | sort) | head -n 1 >"$WORK/$name.dump"
    [[ -s $WORK/$name.dump ]] || die "$name: callgrind wrote no dump"
}
# instructions NAME COUNT: the dump's instructions over COUNT.
instructions() {
    local total
    total="$(awk '/^(summary|totals):/ { print $2; exit }' "$(cat "$WORK/$1.dump")")"
    [[ -n $total ]] || die "$1: no total in its dump"
    echo $((total / $2))
}
# inclusive NAME FUNCTION COUNT: FUNCTION's inclusive instructions in the dump, over COUNT.
inclusive() {
    local total
    total="$(callgrind_annotate --inclusive=yes --threshold=100 "$(cat "$WORK/$1.dump")" 2>/dev/null |
        awk -v f="$2" '{ gsub(",", "", $1) } $0 ~ ("[: ]" f " ") || $NF ~ (":" f "$") { print $1; exit }')"
    [[ -n $total ]] || die "$1: $2 is not in its dump"
    echo $((total / $3))
}

log "counting: $REQUESTS requests per path under callgrind, $MINTS mints (a few minutes)"
count nio "$NIO_PID" "$NIO$TOKEN_PATH" "" 200 "$REQUESTS"
count plain "$PLAIN_PID" "$PLAIN$TOKEN_PATH" "" 200 "$REQUESTS"
count bare "$BARE_PID" "$BARE$TOKEN_PATH" "" 200 "$REQUESTS"
count hit "$GATEWAY_PID" "$GATEWAY$TOKEN_PATH" "$API_KEY" 200 "$REQUESTS"
count jwt "$GATEWAY_PID" "$GATEWAY$TOKEN_PATH" "$SESSION_JWT" 200 "$REQUESTS"
count denied401 "$GATEWAY_PID" "$GATEWAY$TOKEN_PATH" "$BAD_KEY" 401 "$REQUESTS"
count denied429 "$GATEWAY_PID" "$GATEWAY$LIMITED_PATH" "$API_KEY" 429 "$REQUESTS"
count flood429 "$GATEWAY_PID" "$GATEWAY$FLOOD_PATH" "$BAD_KEY" 429 "$REQUESTS"
# The same request, traceparent and all, to the untraced gateway: what the header costs any server that reads it.
TRACEPARENT=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00 count traceparent "$GATEWAY_PID" "$GATEWAY$TOKEN_PATH" "$API_KEY" 200 "$REQUESTS"
TRACEPARENT=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00 count unsampled "$TRACED_PID" "$TRACED$TOKEN_PATH" "$API_KEY" 200 "$REQUESTS"
count mint "$GATEWAY_PID" "$GATEWAY$TOKEN_PATH" "$API_KEY" 200 "$MINTS" m-

NIO="$(instructions nio "$REQUESTS")" BARE="$(instructions bare "$REQUESTS")" HIT="$(instructions hit "$REQUESTS")"
MINT="$(instructions mint "$MINTS")" SIGN="$(inclusive mint EVP_PKEY_sign "$MINTS")"
VERIFY="$(inclusive mint EVP_PKEY_verify "$MINTS")"
row() {
    local figure
    figure="$(instructions "$1" "$REQUESTS")"
    printf '| %s | %d | %.2f | %.2f |\n' "$2" "$figure" "$(calc "$figure / $NIO" .4f)" "$(calc "$figure / $HIT" .4f)"
}
cat <<EOF
### Instructions per request ($(date -u +%Y-%m-%dT%H:%MZ))

callgrind, user-space instructions of the server per request: $REQUESTS requests per path (after a warm-up of a
tenth of that), one keep-alive connection, one request at a time; $MINTS mints.

| path | instructions/request | vs bare NIO | vs cached hit |
|---|---:|---:|---:|
$(row nio "bare SwiftNIO server")
$(row plain "plain SwiftNIO server (one handler, a flush per answer)")
$(row bare "bare Hummingbird route")
$(row hit "gateway, api-key caller, cached")
$(row jwt "gateway, jwt caller, cached")
$(row denied401 "gateway, 401 (unknown api key)")
$(row denied429 "gateway, 429 (caller limit)")
$(row flood429 "gateway, 429 (failed-auth limit)")
$(row traceparent "gateway, api-key caller, cached, the request with a traceparent (untraced gateway)")
$(row unsampled "traced gateway (1 in 100), cached, a caller's traceparent not sampled")

| cold mint (a new trip per request) | instructions |
|---|---:|
| per mint | $MINT |
| of which the RSA-2048 signature (EVP_PKEY_sign, inclusive) | $SIGN |
| of which the RSA verification of the gateway's own token (EVP_PKEY_verify, inclusive) | $VERIFY |
| mint over signature | $(calc "$MINT / $SIGN" .3f) |
EOF
