#!/usr/bin/env bash
# Soak: mixed load on one gateway over loopback for a long time (hits, misses, denials, and a configuration reload
# every 30 s), sampling the server's resident memory, open file descriptors, task (thread) count and the load's
# p99 latency every INTERVAL seconds. Fails if a request gets an answer it should not (or a socket error), or if
# memory, descriptors, tasks or p99 keep growing: the last third of the run is compared with the middle third.
#
# Usage: Benchmarks/soak.sh
# Environment (all optional):
#   SOAK_SECONDS=600  how long (CI runs a bounded 60)
#   INTERVAL=10       seconds per sample (one wrk run each)
#   CONNECTIONS=16    wrk connections (one wrk thread)
#   BINARY=PATH       the tokengate binary (default: the release build, built unless SKIP_BUILD=1)
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
SOAK_SECONDS="${SOAK_SECONDS:-600}"
INTERVAL="${INTERVAL:-10}"
CONNECTIONS="${CONNECTIONS:-16}"
HOST=127.0.0.1

log() { printf '%s\n' "$*" >&2; }
die() { log "soak.sh: $*"; exit 1; }

if ! command -v wrk >/dev/null; then
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
        log "installing wrk"
        apt-get install -y wrk >/dev/null 2>&1 || { apt-get update >/dev/null && apt-get install -y wrk >/dev/null; }
    else
        die "wrk is missing; install it with: sudo apt-get install -y wrk"
    fi
fi
for tool in curl openssl; do command -v "$tool" >/dev/null || die "$tool is missing"; done

cd "$ROOT"
if [[ -z "${BINARY:-}" ]]; then
    [[ -n "${SKIP_BUILD:-}" ]] || { log "building the release binary"; swift build -c release --product tokengate >&2; }
    BINARY="$(swift build -c release --show-bin-path)/tokengate"
fi
[[ -x $BINARY ]] || die "no tokengate binary at $BINARY"

WORK="$(mktemp -d "${TMPDIR:-/tmp}/tokengate-soak.XXXXXX")"
SERVER_PID="" RELOADER_PID=""
cleanup() {
    [[ -n $RELOADER_PID ]] && kill "$RELOADER_PID" 2>/dev/null || true
    if [[ -n $SERVER_PID ]]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

API_KEY="tg_soak_$(openssl rand -hex 16)"
API_KEY_SHA256="$("$BINARY" hash-api-key "$API_KEY")"
# Two versions of the configuration, swapped on every reload: the second adds a client, so each reload builds a
# new generation (the provider's backend and cache are handed on, as in production).
write_config() {
    cat >"$WORK/config.yaml.new" <<EOF
server:
  host: $HOST
  port: 0
defaults:
  cache: { minRemaining: 5m, refreshBefore: 10m, maxEntries: 20000 }
providers:
  soak-fleet:
    backend:
      type: static-key
      mintBudget: off   # the gateway's own capacity is measured: no per-tenant bound
      keys:
        consumer:
          - serviceAccountFile: $WORK/keys/consumer.json
            generateIfMissing: true
    rateLimits:
      failedAuth: { rate: 100000000/s, burst: 1000000 }
      failedAuthPerPeer: { rate: 100000000/s, burst: 1000000 }
    clients:
      - { name: soak-backend, type: api-key, keySha256: $API_KEY_SHA256, allow: { consumer: any } }
$1
EOF
    mv "$WORK/config.yaml.new" "$WORK/config.yaml"
}
write_config ""

"$BINARY" serve --config "$WORK/config.yaml" --admin-port 0 --pid-file "$WORK/pid" >"$WORK/serve.out" 2>"$WORK/serve.err" &
SERVER_PID=$!
PORT=""
for ((tries = 0; tries < 300; tries++)); do
    PORT="$(sed -n "s#^tokengate listening on http://$HOST:\([0-9]*\)\$#\1#p" "$WORK/serve.out" | head -n 1)"
    [[ -n $PORT ]] && break
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/serve.err" >&2; die "tokengate exited before listening"; }
    sleep 0.1
done
[[ -n $PORT ]] || die "tokengate did not start listening"

# Every 30 s a reload, alternating the two configurations.
(
    version=0
    while sleep 30; do
        version=$((1 - version))
        if ((version == 1)); then
            write_config "      - { name: soak-extra, type: api-key, keySha256: $(openssl rand -hex 32), allow: { consumer: any } }"
        else
            write_config ""
        fi
        kill -HUP "$SERVER_PID" 2>/dev/null || exit 0
    done
) &
RELOADER_PID=$!

# The mix, by the request ID the gateway echoes: 70 % hits on 200 hot trips, 20 % misses (a new trip each), 10 %
# denials (a wrong API key, which must be 401). Any other answer counts as unexpected.
cat >"$WORK/mix.lua" <<EOF
local counter = 0
local unexpected = 0
local key = "$API_KEY"
function request()
    counter = counter + 1
    local roll = counter % 10
    local kind, trip, credential = "hit", "hot-" .. (counter % 200), key
    if roll == 7 or roll == 8 then
        kind, trip = "miss", "cold-" .. math.random(1, 1000000000) .. "-" .. counter
    elseif roll == 9 then
        kind, credential = "deny", "tg_wrong_" .. counter
    end
    local headers = { ["Authorization"] = "Bearer " .. credential, ["X-Request-ID"] = kind .. "-" .. counter }
    return wrk.format("GET", "/v1/providers/soak-fleet/tokens/consumer?tripId=" .. trip, headers)
end
function response(status, headers, body)
    local id = headers["X-Request-ID"] or headers["x-request-id"] or ""
    local expected = 200
    if id:sub(1, 4) == "deny" then expected = 401 end
    if status ~= expected then unexpected = unexpected + 1 end
end
function done(summary, latency, requests)
    io.write(string.format("unexpected %d\n", unexpected))
end
EOF

printf '%8s %10s %8s %6s %6s %10s %10s %12s\n' "elapsed" "requests" "rss_MB" "fds" "tasks" "p99_ms" "reloads" "unexpected" >&2
SAMPLES="$WORK/samples"
: >"$SAMPLES"
started=$SECONDS
failures=0
while ((SECONDS - started < SOAK_SECONDS)); do
    out="$(wrk -t1 -c"$CONNECTIONS" -d"${INTERVAL}s" --timeout 5s --latency -s "$WORK/mix.lua" "http://$HOST:$PORT" 2>&1)" ||
        die "wrk failed: $out"
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/serve.err" >&2; die "tokengate died"; }
    requests="$(sed -n 's/^ *\([0-9]*\) requests in.*/\1/p' <<<"$out")"
    p99="$(awk '$1 == "99%" { v = $2; if (v ~ /us$/) { sub(/us$/, "", v); v = v / 1000 } else if (v ~ /ms$/) { sub(/ms$/, "", v) } else if (v ~ /s$/) { sub(/s$/, "", v); v = v * 1000 } print v }' <<<"$out")"
    unexpected="$(sed -n 's/^unexpected \([0-9]*\)$/\1/p' <<<"$out")"
    if grep -q "Socket errors" <<<"$out"; then
        log "socket errors: $(grep 'Socket errors' <<<"$out")"
        failures=$((failures + 1))
    fi
    rss_kb="$(awk '/^VmRSS:/ { print $2 }' "/proc/$SERVER_PID/status")"
    fds="$(ls "/proc/$SERVER_PID/fd" | wc -l)"
    tasks="$(ls "/proc/$SERVER_PID/task" | wc -l)"
    reloads="$(grep -c "configuration reloaded" "$WORK/serve.err" || true)"
    elapsed=$((SECONDS - started))
    printf '%8s %10s %8s %6s %6s %10s %10s %12s\n' "${elapsed}s" "${requests:-0}" "$((rss_kb / 1024))" "$fds" "$tasks" "${p99:-?}" "$reloads" "${unexpected:-?}" >&2
    echo "$elapsed ${requests:-0} $rss_kb $fds $tasks ${p99:-0} ${unexpected:-1}" >>"$SAMPLES"
    [[ ${unexpected:-1} == 0 ]] || failures=$((failures + 1))
done
not_reloaded="$(grep -c "configuration not reloaded" "$WORK/serve.err" || true)"
((not_reloaded == 0)) || { log "a reload failed:"; grep "configuration not reloaded" "$WORK/serve.err" >&2; failures=$((failures + 1)); }

# Growth: the last third against the middle third (the first third warms up: cache filling, pools growing).
verdict="$(awk '
    { n++; rss[n] = $3; fds[n] = $4; tasks[n] = $5; p99[n] = $6 }
    function maxof(a, from, to,   m, i) { m = 0; for (i = from; i <= to; i++) if (a[i] > m) m = a[i]; return m }
    END {
        if (n < 3) { print "ok too few samples to judge growth"; exit }
        third = int(n / 3); mid_from = third + 1; mid_to = 2 * third; last_from = 2 * third + 1
        problems = ""
        if (maxof(rss, last_from, n) > maxof(rss, mid_from, mid_to) * 1.10 + 16384) problems = problems " rss"
        if (maxof(fds, last_from, n) > maxof(fds, mid_from, mid_to) + 10) problems = problems " fds"
        if (maxof(tasks, last_from, n) > maxof(tasks, mid_from, mid_to) + 4) problems = problems " tasks"
        if (maxof(p99, last_from, n) > maxof(p99, mid_from, mid_to) * 3 + 5) problems = problems " p99"
        if (problems == "") print "ok"; else print "growth:" problems
    }' "$SAMPLES")"
log "soak: ${SOAK_SECONDS}s, $(wc -l <"$SAMPLES") samples, $(awk '{ s += $2 } END { print s }' "$SAMPLES") requests; growth check: $verdict"
[[ $verdict == ok* ]] || failures=$((failures + 1))
((failures == 0)) || die "FAILED ($failures problems)"
log "soak: passed"
