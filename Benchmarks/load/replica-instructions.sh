#!/usr/bin/env bash
# Instructions per new trip through two replicas on Redis, against one gateway alone: where issue 49's third target
# (a new trip through two replicas, saturated, at most 1.3 × one gateway alone) loses its CPU, in counts that do not
# drift with the machine.
#
# Three gateways and redis-server run under valgrind's callgrind on 127.0.0.1: a gateway alone (no sharedState)
# and two replicas of one deployment (sharedState on the one Redis, replicas: 2), each with scale-out.sh's
# configuration. A Python client asks the gateway alone for MINTS new trips one after another, then asks both
# replicas for another MINTS new trips, each trip at both replicas at once (two keep-alive connections, the two
# requests of a trip released together), as scale-out.sh's two wrk processes do. Each process's counters are zeroed
# after a warm-up and dumped after its requests: the figures are user-space instructions per new trip of every
# thread of the process, the kernel's share not counted. Which replica minted each trip is read from both replicas'
# /metrics (backend calls), so "per trip, both replicas" is one mint and one wait, the same work scale-out.sh's
# saturated run asks for.
#
# Usage: Benchmarks/load/replica-instructions.sh
# Environment (all optional):
#   MINTS=200       new trips counted at the gateway alone and at the two replicas
#   SKIP_BUILD=1    build only the release binary if it is missing
#   TOKENGATE=PATH  the gateway binary to count (never built then)
#   KEEP_WORK=1     keep the scratch directory (configurations, logs, callgrind's dumps) for callgrind_annotate
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
MINTS="${MINTS:-200}"
HOST=127.0.0.1
PROVIDER=load-fleet
START_SECONDS=120

. "$(dirname "$0")/lib.sh"

need valgrind valgrind
need binutils objcopy
need gcc cc
need redis-server redis-server
need redis-tools redis-cli
for tool in callgrind_control callgrind_annotate curl python3 openssl; do command -v "$tool" >/dev/null || die "$tool is missing"; done
if [[ -n ${TOKENGATE:-} ]]; then
    [[ -x $TOKENGATE && -f $TOKENGATE ]] || die "TOKENGATE=$TOKENGATE is not an executable file"
    TOKENGATE="$(realpath "$TOKENGATE")"
fi
cd "$ROOT"
[[ -n ${TOKENGATE:-} ]] || TOKENGATE="$(release_binary . tokengate)"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/tokengate-replica-instructions.XXXXXX")"
PIDS=()
cleanup() {
    local pid
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    if [[ -n ${KEEP_WORK:-} ]]; then log "kept $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# --- Redis, under callgrind too: its instructions per trip are part of what sharing costs ----------------------
# redis-server cannot pick a port itself (0 turns TCP off): a free one, tried again (bounded) if taken meanwhile.
redis() { redis-cli -h "$HOST" -p "$REDIS_PORT" "$@" | tr -d '\r'; }
mkdir -p "$WORK/redis"
REDIS_PID=""
for ((attempt = 0; attempt < 5; attempt++)); do
    REDIS_PORT="$(free_port)"
    valgrind --tool=callgrind --callgrind-out-file="$WORK/redis.cg" redis-server --bind "$HOST" --port "$REDIS_PORT" \
        --save "" --appendonly no --daemonize no --dir "$WORK/redis" --logfile "$WORK/redis/redis.log" \
        >"$WORK/redis.out" 2>&1 &
    pid=$!
    PIDS+=("$pid")
    for ((tries = 0; tries < 300; tries++)); do
        if [[ $(redis ping 2>/dev/null) == PONG ]]; then REDIS_PID=$pid; break; fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    [[ -n $REDIS_PID ]] && break
    kill "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
done
if [[ -z $REDIS_PID ]]; then
    cat "$WORK/redis/redis.log" >&2
    die "redis-server did not start on a free port in 5 attempts"
fi

# --- Configurations: scale-out.sh's (a static-key provider, an api-key client) ---------------------------------
API_KEY="tg_load_$(openssl rand -hex 16)"
API_KEY_SHA256="$("$TOKENGATE" hash-api-key "$API_KEY")"
ENCRYPTION_KEY="$(openssl rand -base64 32)"
write_scale_out_config alone 0 0
write_scale_out_config replicas 1 0 2

# The gateway's async main needs dispatch_main() replaced under valgrind (see the file).
cc -shared -fPIC -O2 -o "$WORK/dispatch_main.so" "$ROOT/Benchmarks/load/callgrind/dispatch_main.c" ||
    die "could not build Benchmarks/load/callgrind/dispatch_main.c"
objcopy --strip-debug "$TOKENGATE" "$WORK/tokengate.bin" || die "could not copy $TOKENGATE without its debug sections"
# gateway NAME CONFIG: the gateway under callgrind, its dumps in $WORK/NAME.cg.*; sets PORT, ADMIN_PORT and PID.
gateway() {
    LD_PRELOAD="$WORK/dispatch_main.so" start "$1" "$WORK/$1.out" valgrind --tool=callgrind \
        --callgrind-out-file="$WORK/$1.cg" "$WORK/tokengate.bin" serve --config "$2" --port 0 --admin-port 0 \
        --log-level info
    ADMIN_PORT=""
    for ((tries = 0; tries < 300; tries++)); do
        ADMIN_PORT="$(sed -n "s#^.* admin listening on http://$HOST:\([0-9]*\)\$#\1#p" "$WORK/$1.out" | head -n 1)"
        [[ -n $ADMIN_PORT ]] && break
        sleep 0.1
    done
    [[ -n $ADMIN_PORT ]] || die "$1 did not report its admin port"
}
gateway alone "$WORK/alone/config.yaml"
ALONE_PID=$PID ALONE="http://$HOST:$PORT"
gateway replica-a "$WORK/replicas/config.yaml"
A_PID=$PID A="http://$HOST:$PORT" A_ADMIN="http://$HOST:$ADMIN_PORT"
gateway replica-b "$WORK/replicas/config.yaml"
B_PID=$PID B="http://$HOST:$PORT" B_ADMIN="http://$HOST:$ADMIN_PORT"
TOKEN_PATH="/v1/providers/$PROVIDER/tokens/consumer"

# trips PREFIX COUNT URL...: COUNT new trips (PREFIX1, PREFIX2, ...), each asked of every URL at once (one keep-alive
# connection and one thread per URL, the requests of one trip released together); every answer must be 200.
trips() {
    python3 - "$API_KEY" "$TOKEN_PATH" "$@" <<'EOF'
import http.client, sys, threading, urllib.parse
key, path, prefix, count, urls = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5:]
barrier = threading.Barrier(len(urls))
failures = []

def ask(url):
    parts = urllib.parse.urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=300)
    for i in range(1, count + 1):
        barrier.wait()
        connection.request("GET", f"{path}?tripId={prefix}{i}", headers={"Authorization": "Bearer " + key})
        response = connection.getresponse()
        response.read()
        if response.status != 200:
            failures.append(f"{url}: trip {prefix}{i} answered {response.status}")
            barrier.abort()
            return

threads = [threading.Thread(target=ask, args=(url,)) for url in urls]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join()
if failures:
    sys.exit("\n".join(failures))
EOF
}
# mints ADMIN: the backend calls a gateway has made so far (its mints).
mints() {
    curl -sS --max-time 60 "$1/metrics" |
        awk 'index($0, "tokengate_backend_calls_total") == 1 { n += $NF } END { printf "%d\n", n }'
}
# dump NAME PID: dumps PID's counters since its last zeroing; the dump's file name goes to $WORK/NAME.dump.
dump() {
    local before
    before="$(ls "$WORK"/*.cg.* 2>/dev/null | sort)" || true
    callgrind_control -d "$2" >/dev/null
    comm -13 <(echo "$before") <(ls "$WORK"/*.cg.* | sort) | head -n 1 >"$WORK/$1.dump"
    [[ -s $WORK/$1.dump ]] || die "$1: callgrind wrote no dump"
}
# instructions NAME: the dump's instructions over MINTS.
instructions() {
    local total
    total="$(awk '/^(summary|totals):/ { print $2; exit }' "$(cat "$WORK/$1.dump")")"
    [[ -n $total ]] || die "$1: no total in its dump"
    echo $((total / MINTS))
}
# inclusive NAME FUNCTION: FUNCTION's inclusive instructions in the dump, over MINTS (0 when it never ran).
inclusive() {
    local total
    total="$(callgrind_annotate --inclusive=yes --threshold=100 "$(cat "$WORK/$1.dump")" 2>/dev/null |
        awk -v f="$2" '{ gsub(",", "", $1) } $0 ~ ("[: ]" f " ") || $NF ~ (":" f "$") { print $1; exit }')"
    echo $((${total:-0} / MINTS))
}

log "counting: $MINTS new trips at the gateway alone, then $MINTS at both replicas at once (a few minutes)"
trips warm- $((MINTS / 10 + 1)) "$ALONE"
callgrind_control -z "$ALONE_PID" >/dev/null
trips alone- "$MINTS" "$ALONE"
dump alone "$ALONE_PID"

trips warm- $((MINTS / 10 + 1)) "$A" "$B"
MINTED_A0="$(mints "$A_ADMIN")" MINTED_B0="$(mints "$B_ADMIN")"
for pid in "$A_PID" "$B_PID" "$REDIS_PID"; do callgrind_control -z "$pid" >/dev/null; done
trips shared- "$MINTS" "$A" "$B"
dump replica-a "$A_PID"
dump replica-b "$B_PID"
dump redis "$REDIS_PID"
MINTED_A=$(($(mints "$A_ADMIN") - MINTED_A0)) MINTED_B=$(($(mints "$B_ADMIN") - MINTED_B0))

ALONE_I="$(instructions alone)" A_I="$(instructions replica-a)" B_I="$(instructions replica-b)"
REDIS_I="$(instructions redis)"
BOTH=$((A_I + B_I))
ratio() { calc "$1 / $ALONE_I" .3f; }
# by NAME: a dump's share of the work named in the table's last columns.
by() {
    printf '%d | %d | %d' "$(inclusive "$1" EVP_PKEY_sign)" "$(inclusive "$1" EVP_PKEY_verify)" \
        "$(($(inclusive "$1" EVP_EncryptUpdate) + $(inclusive "$1" EVP_DecryptUpdate)))"
}
cat <<EOF
### Instructions per new trip, two replicas on Redis ($(date -u +%Y-%m-%dT%H:%MZ))

callgrind, user-space instructions per new trip of every thread of each process; $MINTS trips at the gateway
alone one after another, then $MINTS trips each asked of both replicas at once (after a warm-up of a tenth of
that). Backend calls in the counted trips: replica A $MINTED_A, replica B $MINTED_B (one per trip is one mint
across the replicas). Redis $(redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p').

| process | instructions/trip | vs the gateway alone | RSA sign | RSA verify | AES-GCM |
|---|---:|---:|---:|---:|---:|
| gateway alone (no sharedState) | $ALONE_I | 1.000 | $(by alone) |
| replica A | $A_I | $(ratio "$A_I") | $(by replica-a) |
| replica B | $B_I | $(ratio "$B_I") | $(by replica-b) |
| both replicas | $BOTH | $(ratio "$BOTH") | |
| redis-server | $REDIS_I | $(ratio "$REDIS_I") | |
| both replicas and Redis | $((BOTH + REDIS_I)) | $(ratio "$((BOTH + REDIS_I))") | |

"RSA sign", "RSA verify", "AES-GCM": the inclusive instructions per trip of OpenSSL's EVP_PKEY_sign,
EVP_PKEY_verify and EVP_EncryptUpdate + EVP_DecryptUpdate (the stored token's encryption) in that process.
EOF
