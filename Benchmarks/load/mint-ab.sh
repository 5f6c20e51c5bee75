#!/usr/bin/env bash
# Cold mints of two gateway builds, A and B, in alternation: which mints cheaper, on a machine that drifts.
#
#   Benchmarks/load/mint-ab.sh A_BINARY B_BINARY [ROUNDS] [MINTS]
#
# Both gateways run at once on core 0, on one configuration (a static-key provider, an api-key caller); wrk on core 1
# asks each in turn for MINTS (3000) trips never seen before, ROUNDS (12) times, with `openssl speed rsa2048` on
# core 0 before, between and after (a virtual machine's core drifts by 10 % within a minute, so each round is set
# against the signature runs beside it). Per round and build: CPU µs per mint, that over one signature's CPU, and
# context switches per mint (every thread of the gateway). The summary gives the medians and the median of B's
# ratio over A's in the same round. Needs wrk (installed with apt-get when run as root), openssl, curl, python3
# and taskset; 127.0.0.1 only.
set -euo pipefail
cd "$(dirname "$0")"
. ./lib.sh
[[ $# -ge 2 ]] || die "usage: mint-ab.sh A_BINARY B_BINARY [ROUNDS] [MINTS]"
A=$1 B=$2 ROUNDS=${3:-12} MINTS=${4:-3000}
need wrk wrk
WORK="$(mktemp -d)"
PIDS=()
trap 'kill "${PIDS[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$WORK"' EXIT
KEY="tg_load_$(openssl rand -hex 16)"

# start NAME BINARY: a gateway on an ephemeral port; its PID and port in $WORK/NAME.{pid,port}.
start() {
    local dir="$WORK/$1" port=""
    mkdir -p "$dir"
    cat >"$dir/config.yaml" <<YAML
server: { host: 127.0.0.1, port: 0 }
defaults:
  audience: https://fleetengine.googleapis.com/
  cache: { minRemaining: 5m, refreshBefore: 10m, maxEntries: 250000 }
providers:
  load-fleet:
    backend:
      type: static-key
      mintBudget: off   # the gateway's own capacity is measured: no per-tenant bound
      tokenLifetime: 1h
      keys:
        consumer:
          - { serviceAccountFile: $dir/keys/consumer.json, generateIfMissing: true }
    clients:
      - { name: load-backend, type: api-key, keySha256: $("$2" hash-api-key "$KEY"), allow: { consumer: any } }
YAML
    taskset -c 0 "$2" serve --config "$dir/config.yaml" --port 0 --admin-port 0 >"$dir/out" 2>"$dir/err" &
    PIDS+=($!)
    echo $! >"$WORK/$1.pid"
    for _ in $(seq 300); do
        port="$(sed -n '/admin listening/!s#^.* listening on http://127.0.0.1:\([0-9]*\)$#\1#p' "$dir/out" | head -1)"
        [[ -n $port ]] && break
        sleep 0.1
    done
    [[ -n $port ]] || die "$2 did not start: $(cat "$dir/err")"
    echo "$port" >"$WORK/$1.port"
    curl -sf -o /dev/null -H "Authorization: Bearer $KEY" "http://127.0.0.1:$port/v1/providers/load-fleet/tokens/consumer?tripId=warm" \
        || die "$2 did not mint"
}

# Every request a new trip (PREFIX0, PREFIX1, …); wrk stops once MINTS answers came (its first request() call is
# a probe it never sends, hence the counting of answers, not requests).
cat >"$WORK/trips.lua" <<'LUA'
local limit, done, prefix = tonumber(os.getenv("MINTS")), os.getenv("DONE"), os.getenv("PREFIX")
local calls, received = 0, 0
request = function()
    calls = calls + 1
    return wrk.format("GET", "/v1/providers/load-fleet/tokens/consumer?tripId=" .. prefix .. calls)
end
response = function(status, headers, body)
    received = received + 1
    if received == limit then io.open(done, "w"):close(); wrk.thread:stop() end
end
LUA

switches() { cat "/proc/$1"/task/*/status | awk '/ctxt_switches/ { total += $2 } END { print total }'; }
sign_us() { taskset -c 0 openssl speed -seconds 2 rsa2048 2>/dev/null | awk '/^rsa 2048 bits/ { print 1e6 / $(NF-1) }'; }

# round NAME N: MINTS cold mints on NAME; prints "ticks answers switches".
round() {
    local pid port t0 c0 wrk_pid
    pid=$(cat "$WORK/$1.pid") port=$(cat "$WORK/$1.port")
    rm -f "$WORK/done"
    t0=$(cpu_ticks "$pid") c0=$(switches "$pid")
    MINTS=$MINTS DONE="$WORK/done" PREFIX="r$2-" taskset -c 1 wrk -t1 -c32 -d600s --timeout 10s -s "$WORK/trips.lua" \
        -H "Authorization: Bearer $KEY" "http://127.0.0.1:$port" >"$WORK/wrk.out" &
    wrk_pid=$!
    while kill -0 "$wrk_pid" 2>/dev/null && [[ ! -e $WORK/done ]]; do sleep 0.1; done
    kill -INT "$wrk_pid" 2>/dev/null || true
    wait "$wrk_pid" || true
    ! grep -q Non-2xx "$WORK/wrk.out" || die "$1 answered non-2xx: $(cat "$WORK/wrk.out")"
    echo "$(($(cpu_ticks "$pid") - t0)) $(awk '/requests in/ { print $1 }' "$WORK/wrk.out") $(($(switches "$pid") - c0))"
}

start a "$A"
start b "$B"
log "A: $A"
log "B: $B"
: >"$WORK/rounds"
for r in $(seq "$ROUNDS"); do
    s1=$(sign_us) a=$(round a "$r") s2=$(sign_us) b=$(round b "$r") s3=$(sign_us)
    echo "$r $s1 $s2 $s3 $a $b" >>"$WORK/rounds"
    log "round $r of $ROUNDS done"
done
python3 - "$WORK/rounds" "$(getconf CLK_TCK)" <<'PY'
import statistics, sys
tick = 1e6 / int(sys.argv[2])
rows = {"A": [], "B": []}
print("| round | build | CPU µs/mint | signature µs | mint / signature | context switches / mint |")
print("|---:|---|---:|---:|---:|---:|")
for line in open(sys.argv[1]):
    r, s1, s2, s3, at, an, ac, bt, bn, bc = line.split()
    for name, (ticks, n, ctx), sign in (("A", (at, an, ac), (float(s1) + float(s2)) / 2), ("B", (bt, bn, bc), (float(s2) + float(s3)) / 2)):
        us = int(ticks) * tick / int(n)
        rows[name].append((us, us / sign, int(ctx) / int(n)))
        print(f"| {r} | {name} | {us:.0f} | {sign:.0f} | {us / sign:.3f} | {int(ctx) / int(n):.2f} |")
print()
for name in "AB":
    us, ratio, ctx = zip(*rows[name])
    print(f"{name}: medians {statistics.median(us):.0f} µs/mint, mint/signature {statistics.median(ratio):.3f}, {statistics.median(ctx):.2f} context switches/mint")
paired = [b[1] / a[1] for a, b in zip(rows["A"], rows["B"])]
print(f"B over A, round by round (mint/signature): median {statistics.median(paired):.3f}")
PY
