#!/usr/bin/env bash
# Scale-out benchmark: what `sharedState:` (a Redis the replicas share) costs and saves, on 127.0.0.1 only, against
# a redis-server the script starts itself. Three measurements, each loaded with wrk:
#   1. the cached path (a local hit): one gateway without sharedState against one with it (Redis up); a local hit
#      never asks Redis, so both should give the same figures within noise;
#   2. the cost of a global limit check: the same cached path under a provider rate limit too high to ever refuse,
#      in-process (no sharedState) against shared (checked in Redis: the checks of one event-loop turn in one
#      script call);
#   3. cold mints over two replicas (sharedState, replicas: 2, one Redis, the same key files): two wrk processes,
#      one per replica, ask for the same sequence of new trips at once, so every context is requested at both
#      replicas at about the same time; it reports contexts served per second and backend calls per context
#      (from both replicas' /metrics: 1.00 means one mint per context across the replicas), next to cold mints at
#      one gateway without sharedState, measured in the same run for reference;
#   4. cold mints at a set pace, below what the core can serve: PACED_CONNECTIONS connections per wrk, each asking
#      for a new trip every PACE_MS ms, at one gateway alone and (the same sequence at both) at the two replicas, in
#      ROUNDS interleaved rounds, replica 2 moved to core 1 as if on a machine of its own: what sharing adds to a
#      mint's latency when the machine is not saturated (in 3, the latency is the queue of one saturated core, which
#      two replicas doing one context's work twice make longer).
#
# Usage: Benchmarks/load/scale-out.sh
# Environment (all optional):
#   DURATION=10s       each cached-path wrk run (measurements 1 and 2)
#   ROUNDS=3           interleaved rounds of the four cached-path runs (the report gives medians)
#   CONNECTIONS=32     wrk connections (one wrk thread); in measurement 3, per wrk process
#   COLD_DURATION=10s  the two-replica cold-mint run (every request a new trip), and each paced run of 4
#   PACE_MS=20         measurement 4: each connection's pause between requests
#   PACED_CONNECTIONS=8  measurement 4: connections per wrk
#   PIN=auto           auto: on 2+ cores, the gateways and redis-server on core 0, wrk on core 1; off: no pinning
#   LOG_LEVEL=info     the gateways' --log-level (a served token logs nothing)
#   SKIP_BUILD=1       use the existing release build
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
DURATION="${DURATION:-10s}"
ROUNDS="${ROUNDS:-3}"
CONNECTIONS="${CONNECTIONS:-32}"
COLD_DURATION="${COLD_DURATION:-10s}"
PACE_MS="${PACE_MS:-20}"
PACED_CONNECTIONS="${PACED_CONNECTIONS:-8}"
PIN="${PIN:-auto}"
HOST=127.0.0.1
PROVIDER=load-fleet

. "$(dirname "$0")/lib.sh"

# --- 1. Tools and the release build --------------------------------------------------------------------------
need wrk wrk
need redis-server redis-server
need redis-tools redis-cli
for tool in curl python3 openssl; do command -v "$tool" >/dev/null || die "$tool is missing"; done

cd "$ROOT"
if [[ -z "${SKIP_BUILD:-}" ]]; then
    log "building the release binary (this takes a while the first time)"
    swift build -c release --product tokengate >&2
fi
TOKENGATE="$(swift build -c release --show-bin-path)/tokengate"
[[ -x $TOKENGATE ]] || die "release binary missing; run without SKIP_BUILD"

# Two cores or more: the gateways and redis-server share core 0, wrk gets core 1, so the load generator does not
# steal the servers' CPU. Redis on the gateways' core means the shared runs pay for Redis's CPU in requests/s too,
# as one core's worth of server would; the report gives the gateway's and Redis's CPU time apart.
SERVER_PIN=() CLIENT_PIN=() PINNING="none"
if [[ $PIN == auto ]] && command -v taskset >/dev/null && (($(nproc) >= 2)); then
    SERVER_PIN=(taskset -c 0) CLIENT_PIN=(taskset -c 1) PINNING="gateways and redis-server on core 0, wrk on core 1"
fi

# --- 2. Processes, cleanup -----------------------------------------------------------------------------------
WORK="$(mktemp -d "${TMPDIR:-/tmp}/tokengate-scale-out.XXXXXX")"
PIDS=() WRK_PIDS=()
# stop PID...: SIGTERM, up to 10 s to exit, then SIGKILL; reaps them.
stop() {
    local pid tries
    for pid in "$@"; do kill "$pid" 2>/dev/null || true; done
    for pid in "$@"; do
        for ((tries = 0; tries < 100; tries++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    done
}
cleanup() {
    # wrk runs in the background and the script waits for it, so a signal lands here at once, not after the run.
    if ((${#WRK_PIDS[@]})); then stop "${WRK_PIDS[@]}"; fi
    if ((${#PIDS[@]})); then stop "${PIDS[@]}"; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
trap 'log "scale-out.sh: failed at line $LINENO"' ERR

# forget PID: stops one server and drops it from the cleanup list.
forget() {
    local pid kept=()
    stop "$1"
    for pid in "${PIDS[@]}"; do [[ $pid == "$1" ]] || kept+=("$pid"); done
    PIDS=("${kept[@]}")
}

CLK_TCK="$(getconf CLK_TCK)"

# --- 3. Redis ------------------------------------------------------------------------------------------------
# redis-server cannot pick a port itself (0 turns TCP off): take a free one and try again (bounded) if another
# program binds it first. No persistence: nothing is written to disk.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
redis() { redis-cli -h "$HOST" -p "$REDIS_PORT" "$@" | tr -d '\r'; }
mkdir -p "$WORK/redis"
REDIS_PID="" REDIS_PORT=""
for ((attempt = 0; attempt < 5; attempt++)); do
    REDIS_PORT="$(free_port)"
    "${SERVER_PIN[@]}" redis-server --bind "$HOST" --port "$REDIS_PORT" --save "" --appendonly no --daemonize no \
        --dir "$WORK/redis" --logfile "$WORK/redis/redis.log" &
    pid=$!
    PIDS+=("$pid")
    for ((tries = 0; tries < 100; tries++)); do
        if [[ $(redis ping 2>/dev/null) == PONG ]]; then REDIS_PID=$pid; break; fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
    done
    [[ -n $REDIS_PID ]] && break
    forget "$pid"
done
[[ -n $REDIS_PID ]] || { cat "$WORK/redis/redis.log" >&2; die "redis-server did not start on a free port in 5 attempts"; }
REDIS_VERSION="$(redis-server --version | sed -n 's/.* v=\([^ ]*\).*/\1/p')"
# redis_commands: commands Redis has processed so far, those a script calls included (each redis-cli call adds one).
redis_commands() { redis info stats | sed -n 's/^total_commands_processed:\([0-9]*\)$/\1/p'; }
# redis_scripts: EVAL and EVALSHA calls so far (the commands inside them not counted).
redis_scripts() { redis info commandstats | awk -F'[:=,]' '$1 == "cmdstat_evalsha" || $1 == "cmdstat_eval" { n += $3 } END { print n + 0 }'; }

# --- 4. Configurations, keys and credentials -----------------------------------------------------------------
API_KEY="tg_load_$(openssl rand -hex 16)"
API_KEY_SHA256="$("$TOKENGATE" hash-api-key "$API_KEY")"
ENCRYPTION_KEY="$(openssl rand -base64 32)"

write_scale_out_config local 0 0
write_scale_out_config shared 1 0
write_scale_out_config local-limit 0 1
write_scale_out_config shared-limit 1 1
write_scale_out_config cold 1 0 2

# --- 5. Gateways ---------------------------------------------------------------------------------------------
# start NAME CONFIG: starts a gateway on free ports (public and admin), waits (bounded) for both "listening on"
# lines and sets PID, URL (public) and ADMIN (admin).
start() {
    local name=$1 config=$2 out="$WORK/$1.out" tries port admin
    : >"$out"
    "${SERVER_PIN[@]}" "$TOKENGATE" serve --config "$config" --port 0 --admin-port 0 --log-level "${LOG_LEVEL:-info}" \
        >"$out" 2>"$out.err" &
    PID=$!
    PIDS+=("$PID")
    for ((tries = 0; tries < 300; tries++)); do
        port="$(sed -n "/admin listening/!s#^.* listening on http://$HOST:\([0-9]*\)\$#\1#p" "$out" | head -n 1)"
        admin="$(sed -n "s#^.* admin listening on http://$HOST:\([0-9]*\)\$#\1#p" "$out" | head -n 1)"
        if [[ -n $port && -n $admin ]]; then
            URL="http://$HOST:$port" ADMIN="http://$HOST:$admin"
            return 0
        fi
        kill -0 "$PID" 2>/dev/null || { cat "$out.err" >&2; die "$name exited before listening"; }
        sleep 0.1
    done
    die "$name did not report its ports within 30 s"
}
TOKEN_PATH="/v1/providers/$PROVIDER/tokens/consumer"
API_AUTH="Authorization: Bearer $API_KEY"
# token URL TRIP: one token request; fails unless it returns a token.
token() {
    curl -sS --max-time 10 -o "$WORK/body.json" -H "$API_AUTH" "$1$TOKEN_PATH?tripId=$2"
    grep -q '"token"' "$WORK/body.json" || { cat "$WORK/body.json" >&2; die "$1 did not return a token for $2"; }
}
# scrape NAME ADMIN: the gateway's /metrics into $WORK/NAME.prom.
scrape() { curl -sS --max-time 10 -f -o "$WORK/$1.prom" "$2/metrics"; }
# metric FILE NAME [FILTER]: the sum of the samples of NAME (with FILTER, e.g. outcome="locked", in their labels).
metric() {
    awk -v name="$2" -v filter="${3:-}" '
        index($0, name) == 1 && substr($0, length(name) + 1, 1) ~ /[{ ]/ && (filter == "" || index($0, filter)) { sum += $NF }
        END { printf "%d\n", sum }
    ' "$1"
}

start local "$WORK/local/config.yaml"
LOCAL_PID=$PID LOCAL=$URL
start shared "$WORK/shared/config.yaml"
SHARED_PID=$PID SHARED=$URL SHARED_ADMIN=$ADMIN
start local-limit "$WORK/local-limit/config.yaml"
LOCAL_LIMIT_PID=$PID LOCAL_LIMIT=$URL
start shared-limit "$WORK/shared-limit/config.yaml"
SHARED_LIMIT_PID=$PID SHARED_LIMIT=$URL SHARED_LIMIT_ADMIN=$ADMIN
grep -q "sharing tokens" "$WORK/shared.out.err" "$WORK/shared.out" || die "the shared gateway did not report its shared state"

# Warm: the first request mints (and, with sharedState, stores the sealed token in Redis); every later one is a
# local hit.
for url in "$LOCAL" "$SHARED" "$LOCAL_LIMIT" "$SHARED_LIMIT"; do token "$url" trip-1; token "$url" trip-1; done
BODY_BYTES="$(wc -c <"$WORK/body.json")"

# --- 6. Measurements 1 and 2: the cached path ----------------------------------------------------------------
# sequential_trips.lua (measurement 3 and its reference): request i asks for trip PREFIX-i, from 1. Two wrk
# processes run it at once, one per replica, so each trip is asked of both replicas at about the same time. lo and hi are globals of the thread's Lua state
# (the first and last trip it asked for), which done() reads through thread:get and prints after wrk's report.
cat >"$WORK/sequential_trips.lua" <<'EOF'
local path, prefix = os.getenv("TOKEN_PATH"), os.getenv("TRIP_PREFIX")
local threads = {}
next_trip, lo, hi = 1, nil, nil
setup = function(thread) table.insert(threads, thread) end
request = function()
    local trip = next_trip
    next_trip = next_trip + 1
    if lo == nil then lo = trip end
    hi = trip
    return wrk.format("GET", path .. "?tripId=" .. prefix .. trip)
end
done = function(summary, latency, requests)
    for _, thread in ipairs(threads) do
        io.write(string.format("trips %s %s\n", tostring(thread:get("lo")), tostring(thread:get("hi"))))
    end
end
EOF
export TOKEN_PATH
# paced_trips.lua (measurement 4): sequential_trips.lua with a pause of PACE_MS before each request.
{ cat "$WORK/sequential_trips.lua"; echo 'delay = function() return tonumber(os.getenv("PACE_MS")) end'; } >"$WORK/paced_trips.lua"
export PACE_MS

# run_wrk NAME SERVER_PID ARGS...: runs wrk (bounded by its own -d plus a timeout), keeps its output in
# $WORK/NAME.wrk, the gateway's and Redis's CPU time during the run, in microseconds, in $WORK/NAME.cpu and
# $WORK/NAME.rcpu (the gateway's system CPU apart in $WORK/NAME.sys, its context switches in $WORK/NAME.ctx), and
# the scripts (EVAL, EVALSHA) Redis ran in $WORK/NAME.reval. Every response must be 2xx.
run_wrk() {
    local name=$1 server=$2 before sys_before switches_before redis_before scripts_before
    shift 2
    scripts_before="$(redis_scripts)"
    before="$(cpu_ticks "$server")" sys_before="$(sys_ticks "$server")" switches_before="$(switches "$server")"
    redis_before="$(cpu_ticks "$REDIS_PID")"
    timeout 900 "${CLIENT_PIN[@]}" wrk -t1 -c"$CONNECTIONS" --latency --timeout 10s "$@" >"$WORK/$name.wrk" &
    WRK_PIDS=($!)
    wait "${WRK_PIDS[0]}" || die "$name: wrk failed"
    WRK_PIDS=()
    echo "$(( ($(cpu_ticks "$server") - before) * 1000000 / CLK_TCK ))" >"$WORK/$name.cpu"
    echo "$(( ($(sys_ticks "$server") - sys_before) * 1000000 / CLK_TCK ))" >"$WORK/$name.sys"
    echo "$(( $(switches "$server") - switches_before ))" >"$WORK/$name.ctx"
    echo "$(( ($(cpu_ticks "$REDIS_PID") - redis_before) * 1000000 / CLK_TCK ))" >"$WORK/$name.rcpu"
    echo "$(( $(redis_scripts) - scripts_before ))" >"$WORK/$name.reval"
    if grep -q "Non-2xx" "$WORK/$name.wrk"; then
        cat "$WORK/$name.wrk" >&2
        die "$name: some responses were not 2xx"
    fi
    # Timeouts or resets skew requests/s: say so next to the figures rather than fail the run.
    if grep -q "Socket errors" "$WORK/$name.wrk"; then log "$name: wrk $(grep "Socket errors" "$WORK/$name.wrk" | xargs)"; fi
}

# Rounds interleave the four gateways, so a burst of other work on a shared machine hits all of them alike; the
# report takes each figure's median over the rounds. Each gateway is asked for its warm trip: a local hit.
log "cached path: $ROUNDS rounds of no sharedState, sharedState, in-process limit, shared limit ($DURATION each, $CONNECTIONS connections)"
scrape shared-limit.before "$SHARED_LIMIT_ADMIN"
scrape shared.before "$SHARED_ADMIN"
LOAD_AVG_START="$(cut -d' ' -f1-3 /proc/loadavg)"
for ((round = 1; round <= ROUNDS; round++)); do
    run_wrk "local.$round" "$LOCAL_PID" -d"$DURATION" -H "$API_AUTH" "$LOCAL$TOKEN_PATH?tripId=trip-1"
    run_wrk "shared.$round" "$SHARED_PID" -d"$DURATION" -H "$API_AUTH" "$SHARED$TOKEN_PATH?tripId=trip-1"
    run_wrk "locallimit.$round" "$LOCAL_LIMIT_PID" -d"$DURATION" -H "$API_AUTH" "$LOCAL_LIMIT$TOKEN_PATH?tripId=trip-1"
    run_wrk "sharedlimit.$round" "$SHARED_LIMIT_PID" -d"$DURATION" -H "$API_AUTH" "$SHARED_LIMIT$TOKEN_PATH?tripId=trip-1"
done
LOAD_AVG_CACHED="$(cut -d' ' -f1-3 /proc/loadavg)"
# The reference for measurement 3: cold mints at one gateway without sharedState, one wrk, a new trip per request.
log "cold mints at one gateway without sharedState (the reference): $COLD_DURATION"
TRIP_PREFIX=b- run_wrk single "$LOCAL_PID" -d"$COLD_DURATION" -s "$WORK/sequential_trips.lua" -H "$API_AUTH" "$LOCAL"
scrape shared-limit.after "$SHARED_LIMIT_ADMIN"
scrape shared.after "$SHARED_ADMIN"
# delta NAME METRIC [FILTER]: how much METRIC grew between NAME.before.prom and NAME.after.prom.
delta() { echo "$(( $(metric "$WORK/$1.after.prom" "$2" "${3:-}") - $(metric "$WORK/$1.before.prom" "$2" "${3:-}") ))"; }
LIMIT_FALLBACKS="$(delta shared-limit tokengate_rate_limit_local_fallback_total)"
LIMIT_ERRORS="$(delta shared-limit tokengate_shared_state_errors_total)"
SHARED_BACKEND_CALLS="$(delta shared tokengate_backend_calls_total)"
SHARED_ERRORS="$(delta shared tokengate_shared_state_errors_total)"
forget "$SHARED_PID"
forget "$LOCAL_LIMIT_PID"
forget "$SHARED_LIMIT_PID"

# --- 7. Measurement 3: cold mints over two replicas ----------------------------------------------------------
export TRIP_PREFIX=s-

# The first replica generates the key files (generateIfMissing), the second loads them; both use one config.
start replica-1 "$WORK/cold/config.yaml"
REPLICA1_PID=$PID REPLICA1=$URL REPLICA1_ADMIN=$ADMIN
start replica-2 "$WORK/cold/config.yaml"
REPLICA2_PID=$PID REPLICA2=$URL REPLICA2_ADMIN=$ADMIN
# Both serve: the second's token for w-1 is the first's, read from Redis.
token "$REPLICA1" w-1
token "$REPLICA2" w-1
scrape replica-1.before "$REPLICA1_ADMIN"
scrape replica-2.before "$REPLICA2_ADMIN"

log "cold mints over two replicas: the same new trip at both, $COLD_DURATION, $CONNECTIONS connections per replica"
CPU1_BEFORE="$(cpu_ticks "$REPLICA1_PID")" CPU2_BEFORE="$(cpu_ticks "$REPLICA2_PID")" REDIS_CPU_BEFORE="$(cpu_ticks "$REDIS_PID")"
SYS_BEFORE=$(($(sys_ticks "$REPLICA1_PID") + $(sys_ticks "$REPLICA2_PID")))
SWITCHES_BEFORE=$(($(switches "$REPLICA1_PID") + $(switches "$REPLICA2_PID")))
REDIS_COMMANDS_BEFORE="$(redis_commands)"
for replica in 1 2; do
    url=REPLICA$replica
    timeout 900 "${CLIENT_PIN[@]}" wrk -t1 -c"$CONNECTIONS" -d"$COLD_DURATION" --latency --timeout 10s \
        -s "$WORK/sequential_trips.lua" -H "$API_AUTH" "${!url}" >"$WORK/cold$replica.wrk" &
    WRK_PIDS+=($!)
done
for pid in "${WRK_PIDS[@]}"; do wait "$pid" || die "cold: wrk failed"; done
WRK_PIDS=()
CPU1="$(( ($(cpu_ticks "$REPLICA1_PID") - CPU1_BEFORE) * 1000000 / CLK_TCK ))"
CPU2="$(( ($(cpu_ticks "$REPLICA2_PID") - CPU2_BEFORE) * 1000000 / CLK_TCK ))"
REDIS_CPU="$(( ($(cpu_ticks "$REDIS_PID") - REDIS_CPU_BEFORE) * 1000000 / CLK_TCK ))"
REPLICAS_SYS="$(( ($(sys_ticks "$REPLICA1_PID") + $(sys_ticks "$REPLICA2_PID") - SYS_BEFORE) * 1000000 / CLK_TCK ))"
REPLICAS_SWITCHES=$(($(switches "$REPLICA1_PID") + $(switches "$REPLICA2_PID") - SWITCHES_BEFORE))
REDIS_COMMANDS="$(( $(redis_commands) - REDIS_COMMANDS_BEFORE - 1 ))"
for replica in 1 2; do
    if grep -q "Non-2xx" "$WORK/cold$replica.wrk"; then cat "$WORK/cold$replica.wrk" >&2; die "cold: some responses were not 2xx"; fi
    if grep -q "Socket errors" "$WORK/cold$replica.wrk"; then log "cold$replica: wrk $(grep "Socket errors" "$WORK/cold$replica.wrk" | xargs)"; fi
done
# Requests still in flight when wrk stopped may still mint: let them finish (bounded) before counting.
for ((tries = 0; tries < 50; tries++)); do
    scrape replica-1.after "$REPLICA1_ADMIN"
    scrape replica-2.after "$REPLICA2_ADMIN"
    calls="$(( $(delta replica-1 tokengate_backend_calls_total) + $(delta replica-2 tokengate_backend_calls_total) ))"
    [[ ${last_calls:-} == "$calls" ]] && break
    last_calls=$calls
    sleep 0.2
done

# --- 7b. Measurement 4: cold mints at a set pace, alone and over the two replicas, interleaved -----------------
log "paced cold mints: $ROUNDS rounds of one gateway alone and the two replicas ($COLD_DURATION each, $PACED_CONNECTIONS connections, a request every $PACE_MS ms each)"
# Replicas run on machines of their own: here replica 2 moves to core 1 (beside wrk, light at this pace), so that
# neither replica's mints wait behind the other's for the one core; the reference keeps core 0 as in 3.
PACED_PINNING="as in 3"
if ((${#SERVER_PIN[@]})); then
    taskset -acp 1 "$REPLICA2_PID" >/dev/null
    PACED_PINNING="replica 2 moved to core 1 (with wrk), replica 1, Redis and the reference on core 0"
fi
for ((round = 1; round <= ROUNDS; round++)); do
    TRIP_PREFIX="pa$round-" timeout 900 "${CLIENT_PIN[@]}" wrk -t1 -c"$PACED_CONNECTIONS" -d"$COLD_DURATION" --latency --timeout 10s \
        -s "$WORK/paced_trips.lua" -H "$API_AUTH" "$LOCAL" >"$WORK/pacedalone.$round.wrk" || die "paced: wrk failed"
    for replica in 1 2; do
        url=REPLICA$replica
        TRIP_PREFIX="pp$round-" timeout 900 "${CLIENT_PIN[@]}" wrk -t1 -c"$PACED_CONNECTIONS" -d"$COLD_DURATION" --latency --timeout 10s \
            -s "$WORK/paced_trips.lua" -H "$API_AUTH" "${!url}" >"$WORK/paced$replica.$round.wrk" &
        WRK_PIDS+=($!)
    done
    for pid in "${WRK_PIDS[@]}"; do wait "$pid" || die "paced: wrk failed"; done
    WRK_PIDS=()
done
for name in pacedalone paced1 paced2; do
    for ((round = 1; round <= ROUNDS; round++)); do
        if grep -q "Non-2xx" "$WORK/$name.$round.wrk"; then cat "$WORK/$name.$round.wrk" >&2; die "paced: some responses were not 2xx"; fi
    done
done
forget "$LOCAL_PID"
LOAD_AVG_END="$(cut -d' ' -f1-3 /proc/loadavg)"

# Distinct contexts requested: trips lo to hi of either wrk (both count from 1, so the union is 1 to the larger hi).
read -r LO1 HI1 < <(sed -n 's/^trips \([0-9]*\) \([0-9]*\)$/\1 \2/p' "$WORK/cold1.wrk") || true
read -r LO2 HI2 < <(sed -n 's/^trips \([0-9]*\) \([0-9]*\)$/\1 \2/p' "$WORK/cold2.wrk") || true
[[ -n ${HI1:-} && -n ${HI2:-} ]] || die "cold: the trip sequence was not reported"
CONTEXTS_REQUESTED="$(( (HI1 > HI2 ? HI1 : HI2) - (LO1 < LO2 ? LO1 : LO2) + 1 ))"
COLD_REQUESTS1="$(wrk_field cold1 requests)" COLD_REQUESTS2="$(wrk_field cold2 requests)"
# Each wrk's answers cover its sequence in order, at most CONNECTIONS out of order: the contexts served are about
# the larger of the two answer counts.
CONTEXTS_SERVED="$(( COLD_REQUESTS1 > COLD_REQUESTS2 ? COLD_REQUESTS1 : COLD_REQUESTS2 ))"
COLD_SECONDS="$(python3 -c 'import sys; print(max(float(v) for v in sys.argv[1:]))' "$(wrk_field cold1 seconds)" "$(wrk_field cold2 seconds)")"
BACKEND_CALLS="$calls"

# --- 8. Report -----------------------------------------------------------------------------------------------
row() { # PATH LABEL
    printf '| %s | %.0f | %.3f | %.3f | %.1f | %.1f | %.2f |\n' "$2" "$(median "$1" rps)" "$(median "$1" p50)" \
        "$(median "$1" p99)" "$(median "$1" cpu)" "$(median "$1" rcpu)" "$(median "$1" reval)"
}
# versus A B: B against A, "requests/s ×R, p99 ±D ms, gateway CPU ±D µs/req (±P %)".
versus() {
    local rps_a rps_b cpu_a cpu_b
    rps_a="$(median "$1" rps)" rps_b="$(median "$2" rps)" cpu_a="$(median "$1" cpu)" cpu_b="$(median "$2" cpu)"
    printf 'requests/s ×%s, p99 %s ms, gateway CPU %s µs/req (%s %%)' "$(calc "$rps_b / $rps_a" .3f)" \
        "$(calc "$(median "$2" p99) - $(median "$1" p99)" +.3f)" "$(calc "$cpu_b - $cpu_a" +.1f)" \
        "$(calc "($cpu_b - $cpu_a) * 100 / $cpu_a" +.1f)"
}
LIMIT_GATEWAY_COST="$(calc "$(median sharedlimit cpu) - $(median locallimit cpu)" .1f)"
LIMIT_REDIS_COST="$(calc "$(median sharedlimit rcpu) - $(median locallimit rcpu)" .1f)"
# mints_row LABEL FILTER METRIC: one outcome at each replica and in total, during the cold run.
mints_row() {
    local one two
    one="$(delta replica-1 "$3" "$2")" two="$(delta replica-2 "$3" "$2")"
    printf '| %s | %d | %d | %d |\n' "$1" "$one" "$two" "$((one + two))"
}
cat <<EOF

## TokenGate scale-out benchmark ($(date -u +%Y-%m-%dT%H:%MZ))

Machine: $(nproc) cores, $(sed -n 's/^model name\s*: //p' /proc/cpuinfo | head -n 1); pinning: $PINNING.
Redis: redis-server $REDIS_VERSION on $HOST (no persistence), one for every gateway (a key prefix each).
Knobs: DURATION=$DURATION ROUNDS=$ROUNDS CONNECTIONS=$CONNECTIONS COLD_DURATION=$COLD_DURATION PACE_MS=$PACE_MS PACED_CONNECTIONS=$PACED_CONNECTIONS PIN=$PIN; wrk 1 thread; response body $BODY_BYTES bytes.
Load average (1/5/15 min): $LOAD_AVG_START at start, $LOAD_AVG_CACHED after the cached runs, $LOAD_AVG_END at the end.

Cached path, the same trip every request (warm), medians of $ROUNDS interleaved rounds. "CPU µs/req": the process's
user + system CPU time during the run over the requests wrk counted; "EVALSHA/req": scripts Redis ran during the run
over those requests (one limit script call checks every request one event-loop turn read; it calls TIME, GET and
SET inside).

| gateway | requests/s | p50 ms | p99 ms | gateway CPU µs/req | Redis CPU µs/req | EVALSHA/req |
|---|---:|---:|---:|---:|---:|---:|
$(row local "1. no sharedState")
$(row shared "1. sharedState, Redis up (local hit)")
$(row locallimit "2. provider limit, in-process (no sharedState)")
$(row sharedlimit "2. provider limit, shared (sharedState: checked in Redis)")

1. sharedState against none, local hit: $(versus local shared).
2. Shared limit against in-process limit: $(versus locallimit sharedlimit).
   Cost of a global limit check: $LIMIT_GATEWAY_COST µs gateway CPU + $LIMIT_REDIS_COST µs Redis CPU per request.
   Against a cached hit (row 1's gateway CPU): $(calc "$LIMIT_GATEWAY_COST / $(median local cpu)" .2f) (issue 31's target: at most 0.3);
   a hit under the shared limit against one under the in-process limit:
   $(calc "$(median sharedlimit cpu) / $(median locallimit cpu)" .2f) × the CPU (target: at most 1.3).

Requests/s per round: no sharedState $(rounds local); sharedState $(rounds shared); in-process limit $(rounds locallimit); shared limit $(rounds sharedlimit).
During these runs the sharedState gateway made $SHARED_BACKEND_CALLS backend calls and saw $SHARED_ERRORS shared-state errors; the shared-limit gateway fell back to its local limit $LIMIT_FALLBACKS times and saw $LIMIT_ERRORS shared-state errors.

Cold mints over two replicas (sharedState, replicas: 2, one Redis, the same key files): two wrk processes (1 thread,
$CONNECTIONS connections each), one per replica, asking for the same sequence of new trips (s-1, s-2, …) for $COLD_DURATION.

| cold mint over two replicas | figure |
|---|---:|
| distinct contexts requested (trips s-$((LO1 < LO2 ? LO1 : LO2)) … s-$((HI1 > HI2 ? HI1 : HI2))) | $CONTEXTS_REQUESTED |
| requests answered: replica 1 / replica 2 | $COLD_REQUESTS1 / $COLD_REQUESTS2 |
| contexts served per second (mints/s, the larger answer count over ${COLD_SECONDS} s) | $(calc "$CONTEXTS_SERVED / $COLD_SECONDS" .0f) |
| backend calls, both replicas (tokengate_backend_calls_total) | $BACKEND_CALLS |
| backend calls per context requested | $(calc "$BACKEND_CALLS / $CONTEXTS_REQUESTED" .3f) |
| p50 / p99 ms, replica 1 | $(wrk_field cold1 p50) / $(wrk_field cold1 p99) |
| p50 / p99 ms, replica 2 | $(wrk_field cold2 p50) / $(wrk_field cold2 p99) |
| gateway CPU µs per context (both replicas) | $(calc "($CPU1 + $CPU2) / $CONTEXTS_REQUESTED" .1f) |
| of which system (kernel) CPU | $(calc "$REPLICAS_SYS / $CONTEXTS_REQUESTED" .1f) |
| context switches per context (both replicas, every thread) | $(calc "$REPLICAS_SWITCHES / $CONTEXTS_REQUESTED" .1f) |
| reference, one gateway without sharedState: mints/s, p50 / p99 ms | $(calc "$(wrk_field single rps)" .0f), $(wrk_field single p50) / $(wrk_field single p99) |
| reference: gateway CPU µs per mint | $(calc "$(cat "$WORK/single.cpu") / $(wrk_field single requests)" .1f) |
| reference: of which system (kernel) CPU | $(calc "$(cat "$WORK/single.sys") / $(wrk_field single requests)" .1f) |
| reference: context switches per mint | $(calc "$(cat "$WORK/single.ctx") / $(wrk_field single requests)" .1f) |
| Redis CPU µs per context / commands per context (those inside scripts included) | $(calc "$REDIS_CPU / $CONTEXTS_REQUESTED" .1f) / $(calc "$REDIS_COMMANDS / $CONTEXTS_REQUESTED" .2f) |

| during the cold run | replica 1 | replica 2 | total |
|---|---:|---:|---:|
$(mints_row "tokengate_shared_mints_total, locked (took the lock, minted)" 'outcome="locked"' tokengate_shared_mints_total)
$(mints_row "tokengate_shared_mints_total, waited (read the other's mint)" 'outcome="waited"' tokengate_shared_mints_total)
$(mints_row "tokengate_shared_mints_total, timed_out (minted without the lock)" 'outcome="timed_out"' tokengate_shared_mints_total)
$(mints_row "tokengate_shared_mints_total, unshared (Redis unreachable)" 'outcome="unshared"' tokengate_shared_mints_total)
$(mints_row "tokengate_shared_cache_total, hit" 'outcome="hit"' tokengate_shared_cache_total)
$(mints_row "tokengate_shared_cache_total, miss" 'outcome="miss"' tokengate_shared_cache_total)
$(mints_row "tokengate_shared_cache_total, rejected" 'outcome="rejected"' tokengate_shared_cache_total)
$(mints_row "tokengate_backend_calls_total" '' tokengate_backend_calls_total)
$(mints_row "tokengate_shared_state_errors_total" '' tokengate_shared_state_errors_total)

Cold mints at a set pace: $PACED_CONNECTIONS connections per wrk, each asking for a new trip every $PACE_MS ms, for
$COLD_DURATION; one gateway without sharedState alone, then the two replicas asked for the same sequence at once;
medians of $ROUNDS interleaved rounds. Pinning: $PACED_PINNING.

| paced cold mint | requests/s | p50 ms | p99 ms |
|---|---:|---:|---:|
| one gateway alone | $(median pacedalone rps | xargs printf '%.0f') | $(median pacedalone p50) | $(median pacedalone p99) |
| two replicas: replica 1 | $(median paced1 rps | xargs printf '%.0f') | $(median paced1 p50) | $(median paced1 p99) |
| two replicas: replica 2 | $(median paced2 rps | xargs printf '%.0f') | $(median paced2 p50) | $(median paced2 p99) |

p50 over two replicas against one gateway alone: $(calc "max($(median paced1 p50), $(median paced2 p50)) / $(median pacedalone p50)" .2f) (issue 31's target: at most 1.3);
round by round, alone / replica 1 / replica 2 p50 ms: $(for ((r = 1; r <= ROUNDS; r++)); do printf '%s/%s/%s ' "$(wrk_field "pacedalone.$r" p50)" "$(wrk_field "paced1.$r" p50)" "$(wrk_field "paced2.$r" p50)"; done)
EOF
