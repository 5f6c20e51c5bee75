#!/usr/bin/env bash
# Connections: 10,000 concurrent keep-alive connections on loopback against one gateway. Phase 1 opens them in
# waves of 500, one request each, holds them idle and reports the memory an idle connection costs; phase 2 opens
# them all at once (wrk) and loads them with cached-token requests. Counts the kernel's listen-queue overflows
# (TcpExtListenOverflows) in each.
#
# Usage: Benchmarks/connections.sh
# Environment (all optional):
#   CONNECTIONS=10000  concurrent connections
#   DURATION=10s       the wrk phase
#   LISTEN_BACKLOG=N   server.listenBacklog (default: the server's default, as long as net.core.somaxconn allows)
#   BINARY=PATH        the tokengate binary (default: the release build, built unless SKIP_BUILD=1)
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
CONNECTIONS="${CONNECTIONS:-10000}"
DURATION="${DURATION:-10s}"
HOST=127.0.0.1

log() { printf '%s\n' "$*" >&2; }
die() { log "connections.sh: $*"; exit 1; }

command -v wrk >/dev/null || die "wrk is missing; install it with: sudo apt-get install -y wrk"
for tool in curl openssl python3; do command -v "$tool" >/dev/null || die "$tool is missing"; done

# Each connection is one descriptor in the server and one in the client: raise the soft limit to the hard one.
needed=$((CONNECTIONS + 1024))
ulimit -n "$(ulimit -Hn)" 2>/dev/null || true
(($(ulimit -n) >= needed)) || die "the descriptor limit is $(ulimit -n); $needed are needed (raise the hard limit: ulimit -Hn, LimitNOFILE)"

cd "$ROOT"
if [[ -z "${BINARY:-}" ]]; then
    [[ -n "${SKIP_BUILD:-}" ]] || { log "building the release binary"; swift build -c release --product tokengate >&2; }
    BINARY="$(swift build -c release --show-bin-path)/tokengate"
fi

WORK="$(mktemp -d "${TMPDIR:-/tmp}/tokengate-connections.XXXXXX")"
SERVER_PID="" SOMAXCONN_BEFORE=""
cleanup() {
    if [[ -n $SERVER_PID ]]; then kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; fi
    if [[ -n $SOMAXCONN_BEFORE ]]; then echo "$SOMAXCONN_BEFORE" >/proc/sys/net/core/somaxconn || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT

# Phase 2 opens every connection in the same instant, more than Linux's default listen-queue cap (somaxconn, 4096)
# holds while the server accepts. The gateway asks for the longest queue the kernel allows (listenBacklog defaults
# to 65535), so the kernel's cap decides: raised for this run where allowed (root), put back afterwards.
SOMAXCONN="$(cat /proc/sys/net/core/somaxconn)"
if ((SOMAXCONN < CONNECTIONS)); then
    if [[ $(id -u) -eq 0 ]] && echo "$CONNECTIONS" >/proc/sys/net/core/somaxconn 2>/dev/null; then
        SOMAXCONN_BEFORE="$SOMAXCONN"
        log "net.core.somaxconn raised from $SOMAXCONN to $CONNECTIONS for this run"
    else
        log "net.core.somaxconn is $SOMAXCONN, below $CONNECTIONS: phase 2 may count listen overflows (as root: sysctl -w net.core.somaxconn=$CONNECTIONS)"
    fi
fi

API_KEY="tg_conn_$(openssl rand -hex 16)"
cat >"$WORK/config.yaml" <<EOF
server:
  host: $HOST
  port: 0
  maxConnections: $((CONNECTIONS + 1000))
${LISTEN_BACKLOG:+  listenBacklog: $LISTEN_BACKLOG
}  idleTimeout: 5m
providers:
  conn-fleet:
    backend:
      type: static-key
      keys:
        consumer: [{ serviceAccountFile: $WORK/keys/consumer.json, generateIfMissing: true }]
    clients:
      - { name: conn-backend, type: api-key, keySha256: $("$BINARY" hash-api-key "$API_KEY"), allow: { consumer: any } }
EOF
"$BINARY" serve --config "$WORK/config.yaml" --admin-port 0 >"$WORK/serve.out" 2>"$WORK/serve.err" &
SERVER_PID=$!
PORT=""
for ((tries = 0; tries < 300; tries++)); do
    PORT="$(sed -n "s#^tokengate listening on http://$HOST:\([0-9]*\)\$#\1#p" "$WORK/serve.out" | head -n 1)"
    [[ -n $PORT ]] && break
    sleep 0.1
done
[[ -n $PORT ]] || { cat "$WORK/serve.err" >&2; die "tokengate did not start"; }
TOKEN_PATH="/v1/providers/conn-fleet/tokens/consumer?tripId=trip-1"
curl -sS -f -o /dev/null -H "Authorization: Bearer $API_KEY" "http://$HOST:$PORT$TOKEN_PATH"

overflows() { awk '/^TcpExt:/ { if (!n) { for (i = 1; i <= NF; i++) h[i] = $i; n = 1 } else { for (i = 1; i <= NF; i++) if (h[i] == "ListenOverflows") print $i } }' /proc/net/netstat; }
rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$SERVER_PID/status"; }

# --- Phase 1: every connection idle after one request (first, so the memory is measured on a fresh server) ----------------------------------------------------------
OVERFLOWS_BEFORE="$(overflows)"
RSS_BEFORE="$(rss_kb)"
log "phase 1: $CONNECTIONS connections, one request each, then idle"
IDLE_OUT="$(python3 - "$HOST" "$PORT" "$CONNECTIONS" "$SERVER_PID" <<'EOF'
import asyncio, sys

host, port, count, pid = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]

def rss_kb():
    for line in open(f"/proc/{pid}/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])

async def open_one(index, ok, failed):
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), 30)
        writer.write(f"GET /healthz HTTP/1.1\r\nHost: {host}\r\n\r\n".encode())
        await writer.drain()
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)
        length = int([l for l in head.decode().split("\r\n") if l.lower().startswith("content-length:")][0].split(":")[1])
        await reader.readexactly(length)
        if head.startswith(b"HTTP/1.1 200"):
            ok.append((reader, writer))
        else:
            failed.append(head[:40])
    except Exception as error:
        failed.append(repr(error)[:80])

async def main():
    ok, failed = [], []
    # In waves of 500, as a fleet of apps reconnecting would arrive.
    for start in range(0, count, 500):
        await asyncio.gather(*(open_one(i, ok, failed) for i in range(start, min(count, start + 500))))
    await asyncio.sleep(3)
    print(f"open {len(ok)} failed {len(failed)} rss_kb {rss_kb()}")
    if failed:
        print("first failures:", failed[:3])
    for _, writer in ok:
        writer.close()

asyncio.run(main())
EOF
)"
log "$IDLE_OUT"
OVERFLOWS_AFTER_IDLE="$(overflows)"
sleep 2

# --- Phase 2: every connection busy ---------------------------------------------------------------------------
log "phase 2: $CONNECTIONS connections loading the cached token for $DURATION"
WRK_OUT="$(wrk -t2 -c"$CONNECTIONS" -d"$DURATION" --timeout 10s -H "Authorization: Bearer $API_KEY" "http://$HOST:$PORT$TOKEN_PATH" 2>&1)"
log "$WRK_OUT"
OVERFLOWS_END="$(overflows)"

OPEN="$(sed -n 's/^open \([0-9]*\) .*/\1/p' <<<"$IDLE_OUT")"
FAILED="$(sed -n 's/^open [0-9]* failed \([0-9]*\) .*/\1/p' <<<"$IDLE_OUT")"
RSS_IDLE="$(sed -n 's/.* rss_kb \([0-9]*\)$/\1/p' <<<"$IDLE_OUT")"
SOCKET_ERRORS="$(grep -c "Socket errors" <<<"$WRK_OUT" || true)"
NON_2XX="$(grep -c "Non-2xx" <<<"$WRK_OUT" || true)"
PER_CONNECTION=$(((RSS_IDLE - RSS_BEFORE) * 1024 / (OPEN > 0 ? OPEN : 1)))

log ""
log "connections:        $CONNECTIONS (listen backlog: ${LISTEN_BACKLOG:-the server default}; net.core.somaxconn $(cat /proc/sys/net/core/somaxconn))"
log "phase 2 (busy):     $(sed -n 's/^Requests\/sec: *//p' <<<"$WRK_OUT") requests/s, socket errors: $([[ $SOCKET_ERRORS == 0 ]] && echo none || grep 'Socket errors' <<<"$WRK_OUT"), non-2xx: $([[ $NON_2XX == 0 ]] && echo none || grep 'Non-2xx' <<<"$WRK_OUT")"
log "phase 1 (idle):     $OPEN open, $FAILED failed; RSS $((RSS_BEFORE / 1024)) MB -> $((RSS_IDLE / 1024)) MB: ${PER_CONNECTION} bytes per idle connection"
log "listen overflows:   $((OVERFLOWS_AFTER_IDLE - OVERFLOWS_BEFORE)) in phase 1, $((OVERFLOWS_END - OVERFLOWS_AFTER_IDLE)) in phase 2"
((SOCKET_ERRORS == 0 && NON_2XX == 0 && FAILED == 0 && OVERFLOWS_END == OVERFLOWS_BEFORE)) || die "FAILED"
log "connections: passed"
