#!/usr/bin/env bash
# Cold mints through IAM: every request is a new trip, so each one is a signJwt call to the Google stand-in
# (Tests/Peers/google), which answers after IAM_DELAY_MS (50 ms, about what iamcredentials.googleapis.com takes
# from a nearby region). Reports contexts minted per second at maxConcurrentSigns, the gateway's CPU per mint,
# latency, and the gateway's thread count before and under load (a waiting mint holds no thread).
#
#   Benchmarks/load/iam-mint.sh                 # 20 s at 64 connections, the debug build unless TOKENGATE is set
#   TOKENGATE=.build/release/tokengate DURATION=30s CONNECTIONS=128 MAX_CONCURRENT_SIGNS=64 Benchmarks/load/iam-mint.sh
#
# Everything runs on 127.0.0.1 and stops by itself (wrk's -d, and a timeout around every wait).
set -euo pipefail
cd "$(dirname "$0")/../.."
. Benchmarks/load/lib.sh

DURATION=${DURATION:-20s}
CONNECTIONS=${CONNECTIONS:-64}
MAX_CONCURRENT_SIGNS=${MAX_CONCURRENT_SIGNS:-64}
IAM_DELAY_MS=${IAM_DELAY_MS:-50}
TOKENGATE=${TOKENGATE:-$(swift build --show-bin-path)/tokengate}
[[ -x $TOKENGATE ]] || die "no tokengate binary at $TOKENGATE (swift build, or set TOKENGATE)"
need wrk wrk

WORK=$(mktemp -d)
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT

# The stand-in: its first stdout line is {"port": N}.
python3 Tests/Peers/google/google_standin.py --state-dir "$WORK/state" --port 0 --max-seconds 600 \
    >"$WORK/standin.out" 2>"$WORK/standin.err" &
PIDS+=($!)
for _ in $(seq 200); do grep -q port "$WORK/standin.out" 2>/dev/null && break; sleep 0.05; done
STANDIN_PORT=$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["port"])' "$WORK/standin.out")
STANDIN=http://127.0.0.1:$STANDIN_PORT
RUNTIME=tokengate@acme-rides.iam.gserviceaccount.com
CONSUMER=fleet-consumer@acme-rides.iam.gserviceaccount.com
control() { curl -sf -X POST -H 'Content-Type: application/json' --data "$1" "$STANDIN/_control"; }
STATE=$(control "{\"accounts\": [{\"email\": \"$RUNTIME\", \"exportKeyFile\": true}, {\"email\": \"$CONSUMER\"}],
    \"grants\": {\"$RUNTIME\": [\"$CONSUMER\"]}}")
KEY_FILE=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["accounts"][sys.argv[2]]["keyFile"])' "$STATE" "$RUNTIME")

PORT=$(free_port)
ADMIN_PORT=$(free_port)
API_KEY=tg_iam_bench_key_0123456789
cat >"$WORK/config.yaml" <<YAML
server: { host: 127.0.0.1, port: $PORT, admin: { host: 127.0.0.1, port: $ADMIN_PORT }, logLevel: warning }
defaults:
  rateLimits: { failedAuth: { rate: 600/min, burst: 100 } }
providers:
  acme-rides:
    cache: { maxEntries: 1000000 }
    backend:
      type: google-iam
      mintBudget: off   # the gateway's own capacity is measured: no per-tenant bound
      serviceAccounts: { consumer: $CONSUMER }
      credentialsFile: $KEY_FILE
      maxConcurrentSigns: $MAX_CONCURRENT_SIGNS
      timeout: 10s
      endpoints:
        iamCredentials: $STANDIN
        publicKeys: $STANDIN/service_accounts/v1/jwk/{serviceAccount}
    clients:
      - { name: bench, type: api-key, keySha256: $(printf '%s' "$API_KEY" | sha256sum | cut -d' ' -f1), allow: { consumer: any } }
YAML
"$TOKENGATE" serve --config "$WORK/config.yaml" >"$WORK/gateway.log" 2>&1 &
GATEWAY=$!
PIDS+=("$GATEWAY")
for _ in $(seq 600); do curl -sf "http://127.0.0.1:$ADMIN_PORT/readyz" >/dev/null 2>&1 && break; sleep 0.05; done
curl -sf "http://127.0.0.1:$ADMIN_PORT/readyz" >/dev/null || { cat "$WORK/gateway.log" >&2; die "the gateway never became ready"; }

# From here every signJwt waits IAM_DELAY_MS first.
control "{\"faults\": {\"signJwt\": {\"delayMs\": $IAM_DELAY_MS, \"count\": -1}}}" >/dev/null
cat >"$WORK/mint.lua" <<LUA
local n = 0
request = function()
    n = n + 1
    return wrk.format("GET", "/v1/providers/acme-rides/tokens/consumer?tripId=bench-" .. n .. "-" .. math.random(1, 1000000000),
        { ["Authorization"] = "Bearer $API_KEY" })
end
LUA
THREADS_IDLE=$(awk '/^Threads:/ { print $2 }' "/proc/$GATEWAY/status")
SIGNS_BEFORE=$(curl -sf "$STANDIN/_control/calls" | python3 -c 'import json,sys; print(json.load(sys.stdin)["calls"].get("signJwt", {}).get("count", 0))')
CPU_BEFORE=$(cpu_ticks "$GATEWAY")
timeout 600 wrk -t1 -c"$CONNECTIONS" -d"$DURATION" --latency --timeout 30s -s "$WORK/mint.lua" "http://127.0.0.1:$PORT" >"$WORK/mint.wrk" &
WRK=$!
sleep 2
THREADS_LOADED=$(awk '/^Threads:/ { print $2 }' "/proc/$GATEWAY/status")
wait "$WRK"
CPU_AFTER=$(cpu_ticks "$GATEWAY")
SIGNS_AFTER=$(curl -sf "$STANDIN/_control/calls" | python3 -c 'import json,sys; print(json.load(sys.stdin)["calls"].get("signJwt", {}).get("count", 0))')
if grep -q "Non-2xx" "$WORK/mint.wrk"; then cat "$WORK/mint.wrk" >&2; die "some mints were refused"; fi

REQUESTS=$(wrk_field mint requests)
SIGNS=$((SIGNS_AFTER - SIGNS_BEFORE))
TICK_US=$((1000000 / $(getconf CLK_TCK)))
echo "cold mints through IAM (signJwt answering after ${IAM_DELAY_MS} ms), maxConcurrentSigns $MAX_CONCURRENT_SIGNS, $CONNECTIONS connections, $DURATION, $(basename "$(dirname "$TOKENGATE")") build"
echo "  contexts minted per second: $(calc "$(wrk_field mint rps)" .0f) ($REQUESTS requests, $SIGNS signJwt calls)"
echo "  latency p50 / p99: $(wrk_field mint p50) / $(wrk_field mint p99) ms"
echo "  gateway CPU per mint: $(calc "($CPU_AFTER - $CPU_BEFORE) * $TICK_US / $REQUESTS" .0f) µs"
echo "  gateway threads: $THREADS_IDLE idle, $THREADS_LOADED with $CONNECTIONS mints waiting on IAM"
