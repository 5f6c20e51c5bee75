# shellcheck shell=bash
# Shell helpers shared by the load benchmarks (run.sh, instructions.sh, scale-out.sh); sourced, never run. They read $WORK (the
# run's scratch directory) and $ROUNDS.

# release_binary PACKAGE_DIR PRODUCT: the path of PRODUCT's release build, built first unless SKIP_BUILD is set and
# it exists (a missing one is built even then: the run cannot do without it).
release_binary() {
    local bin
    bin="$(swift build -c release --package-path "$1" --show-bin-path)/$2" || die "swift build failed to give $1's bin path"
    if [[ -z ${SKIP_BUILD:-} || ! -x $bin ]]; then
        log "building $2 (release; a while the first time)"
        swift build -c release --package-path "$1" --product "$2" >&2 || die "could not build $2"
    fi
    [[ -x $bin ]] || die "$bin missing after the build"
    echo "$bin"
}

# release_binaries: TOKENGATE (the one given, made absolute, or main's release build), BARE_ROUTE, BARE_NIO and
# PLAIN_NIO; ends in $ROOT.
release_binaries() {
    if [[ -n ${TOKENGATE:-} ]]; then
        [[ -x $TOKENGATE && -f $TOKENGATE ]] || die "TOKENGATE=$TOKENGATE is not an executable file"
        TOKENGATE="$(realpath "$TOKENGATE")"
    fi
    cd "$ROOT"
    [[ -n ${TOKENGATE:-} ]] || TOKENGATE="$(release_binary . tokengate)"
    BARE_ROUTE="$(release_binary Benchmarks bare-route)"
    BARE_NIO="$(release_binary Benchmarks bare-nio)"
    PLAIN_NIO="$(release_binary Benchmarks plain-nio)"
}

log() { printf '%s\n' "$*" >&2; }
die() { log "${0##*/}: $*"; exit 1; }

# need PACKAGE COMMAND: installs a Debian package when its command is missing (root and apt-get only).
need() {
    command -v "$2" >/dev/null && return 0
    if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
        log "installing $1"
        apt-get install -y "$1" >/dev/null || { apt-get update >/dev/null && apt-get install -y "$1" >/dev/null; }
    else
        die "$2 is missing; install it with: sudo apt-get install -y $1"
    fi
}

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"; }
# cpu_ticks PID: user + system CPU time of a process, in clock ticks.
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# sys_ticks PID: its system (kernel) CPU time alone, in clock ticks.
sys_ticks() { awk '{ print $15 }' "/proc/$1/stat"; }
# switches PID: context switches of all its threads so far, voluntary (it waited) and not (the scheduler took the core).
switches() {
    cat /proc/"$1"/task/*/status 2>/dev/null | awk '/^(non)?voluntary_ctxt_switches:/ { n += $2 } END { print n + 0 }'
}

# wrk_field NAME rps|p50|p99|requests|seconds: one figure from a wrk report; latencies in milliseconds.
wrk_field() {
    awk -v field="$2" '
        function ms(v) {
            if (v ~ /us$/) return substr(v, 1, length(v) - 2) / 1000
            if (v ~ /ms$/) return substr(v, 1, length(v) - 2) + 0
            if (v ~ /m$/) return substr(v, 1, length(v) - 1) * 60000
            if (v ~ /s$/) return substr(v, 1, length(v) - 1) * 1000
            return v
        }
        field == "rps" && /^Requests\/sec:/ { print $2 }
        field == "p50" && $1 == "50%" { printf "%.3f\n", ms($2) }
        field == "p99" && $1 == "99%" { printf "%.3f\n", ms($2) }
        field == "requests" && / requests in / { print $1 }
        field == "seconds" && / requests in / { sub(/,$/, "", $4); printf "%.3f\n", ms($4) / 1000 }
    ' "$WORK/$1.wrk"
}

calc() { python3 -c "print(format($1, '$2'))"; }
# per_request NAME EXT: a $WORK/NAME.EXT figure (CPU µs, Redis scripts) over the requests wrk counted.
per_request() { calc "$(cat "$WORK/$1.$2") / $(wrk_field "$1" requests)" .3f; }
# median PATH FIGURE: the median over the rounds of a wrk figure (rps, p50, p99), or of a per-request figure the
# run recorded in $WORK/PATH.ROUND.FIGURE (cpu: CPU µs per request, and the like).
median() {
    local round values=()
    for ((round = 1; round <= ROUNDS; round++)); do
        if [[ -e $WORK/$1.$round.$2 ]]; then values+=("$(per_request "$1.$round" "$2")"); else values+=("$(wrk_field "$1.$round" "$2")"); fi
    done
    # Printed to the microsecond, without float noise (the mean of two rounds: 3.3200000000000003).
    python3 -c 'import statistics, sys; print(format(statistics.median(float(v) for v in sys.argv[1:]), ".6f").rstrip("0").rstrip("."))' "${values[@]}"
}
# paired REFERENCE PATH: REFERENCE's CPU per request over PATH's, round by round (the two run back to back in each
# round, so the machine's drift between rounds cancels): "MEDIAN (rounds A/B/C)".
paired() {
    local round ratios=()
    for ((round = 1; round <= ROUNDS; round++)); do
        ratios+=("$(calc "$(per_request "$1.$round" cpu) / $(per_request "$2.$round" cpu)" .2f)")
    done
    local IFS=/
    echo "$(python3 -c 'import statistics, sys; print(format(statistics.median(float(v) for v in sys.argv[1:]), ".2f"))' "${ratios[@]}") (rounds ${ratios[*]})"
}
# rounds PATH: each round's requests/s, for the record.
rounds() {
    local round figures=()
    for ((round = 1; round <= ROUNDS; round++)); do figures+=("$(calc "$(wrk_field "$1.$round" rps)" .0f)"); done
    local IFS=/
    echo "${figures[*]}"
}

# free_port: a loopback port that was free a moment ago, for servers that cannot bind port 0 and report theirs
# (nginx); the caller retries with another when something takes it in between.
free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

# start NAME LOG COMMAND...: starts a server in the background, waits (bounded) for its "listening on" line and
# sets PORT and PID. START_SECONDS (30) bounds the wait: a server under valgrind starts slower.
start() {
    local name=$1 out=$2
    shift 2
    : >"$out"
    "$@" >"$out" 2>"$out.err" &
    PID=$!
    PIDS+=("$PID")
    local tries limit=$((${START_SECONDS:-30} * 10))
    for ((tries = 0; tries < limit; tries++)); do
        PORT="$(sed -n "/admin listening/!s#^.* listening on http://$HOST:\([0-9]*\)\$#\1#p" "$out" | head -n 1)"
        [[ -n $PORT ]] && return 0
        kill -0 "$PID" 2>/dev/null || { cat "$out.err" >&2; die "$name exited before listening"; }
        sleep 0.1
    done
    die "$name did not report its port within ${START_SECONDS:-30} s"
}

# load_config_preamble: the server and defaults sections every load configuration starts with (the gateway on $HOST,
# an ephemeral port, Fleet Engine's audience, the mobile SDKs' cache timings and room for every context).
load_config_preamble() {
cat <<EOF
server:
  host: $HOST
  port: 0
defaults:
  audience: https://fleetengine.googleapis.com/
  cache:
    minRemaining: 5m
    refreshBefore: 10m
    maxEntries: 250000
EOF
}

# load_backend KEYS_DIR: the benchmark provider's backend section (indented for a provider): a static-key signer
# with a key generated in KEYS_DIR, no mint budget (the gateway's own capacity is measured), one-hour tokens.
load_backend() {
    cat <<EOF
    backend:
      type: static-key
      mintBudget: off
      tokenLifetime: 1h
      keys:
        consumer:
          - serviceAccountFile: $1/consumer.json
            generateIfMissing: true
EOF
}

# write_scale_out_config NAME SHARED LIMITED [REPLICAS]: $WORK/NAME/config.yaml for scale-out.sh and
# replica-instructions.sh, run.sh's provider (static-key backend with generated keys in $WORK/NAME/keys, an api-key
# client with $API_KEY_SHA256, a large cache); SHARED=1 adds sharedState on $REDIS_PORT with $ENCRYPTION_KEY (its
# own key prefix, so the gateways on the one Redis never see each other's tokens), LIMITED=1 a provider limit so
# high it never refuses.
write_scale_out_config() {
    local name=$1 shared=$2 limited=$3 replicas=${4:-1}
    mkdir -p "$WORK/$name"
    {
        echo "# Generated by Benchmarks/load/lib.sh (write_scale_out_config $name)."
        load_config_preamble
        if ((shared)); then
            cat <<EOF
sharedState:
  redis: { url: "redis://$HOST:$REDIS_PORT/0" }
  encryptionKey: $ENCRYPTION_KEY
  replicas: $replicas
  keyPrefix: "tg-$name:"
EOF
        fi
        cat <<EOF
providers:
  $PROVIDER:
$(load_backend "$WORK/$name/keys")
    clients:
      - name: load-backend
        type: api-key
        keySha256: $API_KEY_SHA256
        allow:
          consumer: any
EOF
        if ((limited)); then
            cat <<EOF
    rateLimits:
      provider: { rate: 100000000/min, burst: 1000000 }
EOF
        fi
    } >"$WORK/$name/config.yaml"
}

# write_load_config: $WORK/config.yaml, the load benchmarks' gateway configuration (the provider $PROVIDER with an
# api-key and a jwt client and no rate limits; limited-fleet, whose caller may make one request an hour;
# flood-fleet, which allows one failed authentication an hour), and the callers' credentials: API_KEY, and
# SESSION_JWT, a rider's one-hour session token for trip-1. Needs $TOKENGATE, $HOST and $PROVIDER.
write_load_config() {
"$TOKENGATE" keygen --alg RS256 --kid load-idp --out "$WORK/idp" >/dev/null
cp "$WORK/idp/load-idp.jwks.json" "$WORK/idp-jwks.json"
API_KEY="tg_load_$(openssl rand -hex 16)"
API_KEY_SHA256="$("$TOKENGATE" hash-api-key "$API_KEY")"
ISSUER="https://idp.load.test/"
SESSION_AUDIENCE="load-rider-app"

{
echo "# Generated by Benchmarks/load/lib.sh (write_load_config). No rate limits: the benchmark measures the serving path, not the limiter."
load_config_preamble
cat <<EOF
providers:
  $PROVIDER:
$(load_backend "$WORK/keys")
    clients:
      - name: load-backend
        type: api-key
        keySha256: $API_KEY_SHA256
        allow:
          consumer: any
      - name: load-rider
        type: jwt
        jwksFile: $WORK/idp-jwks.json
        issuer: $ISSUER
        audience: $SESSION_AUDIENCE
        allow:
          consumer: { claim: trips }
    # Failed authentications are not limited here, so every bad credential costs its full check: the 401 row.
    rateLimits:
      failedAuth: { rate: 100000000/s, burst: 1000000 }
      failedAuthPerPeer: { rate: 100000000/s, burst: 1000000 }
  # The 429 rows: a caller limit the load exceeds at once, and the failed-authentication limit a flood trips.
  limited-fleet:
    backend:
      type: static-key
      mintBudget: off   # the gateway's own capacity is measured: no per-tenant bound
      keys:
        consumer:
          - serviceAccountFile: $WORK/keys/limited.json
            generateIfMissing: true
    clients:
      - name: limited-backend
        type: api-key
        keySha256: $API_KEY_SHA256
        allow:
          consumer: any
    rateLimits:
      caller: { rate: 1/h, burst: 1 }
  flood-fleet:
    backend:
      type: static-key
      mintBudget: off   # the gateway's own capacity is measured: no per-tenant bound
      keys:
        consumer:
          - serviceAccountFile: $WORK/keys/flood.json
            generateIfMissing: true
    clients:
      - name: flood-backend
        type: api-key
        keySha256: $API_KEY_SHA256
        allow:
          consumer: any
    rateLimits:
      failedAuth: { rate: 1/h, burst: 1 }
      failedAuthPerPeer: { rate: 1/h, burst: 1 }
EOF
} >"$WORK/config.yaml"

# The rider's session token, signed with the IdP key as an identity provider would: valid for an hour.
SESSION_JWT="$(python3 - "$WORK/idp/load-idp.pem" "$ISSUER" "$SESSION_AUDIENCE" <<'EOF'
import base64, json, sys, time
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding

def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()

pem, issuer, audience = sys.argv[1:4]
key = serialization.load_pem_private_key(open(pem, "rb").read(), password=None)
now = int(time.time())
header = {"alg": "RS256", "typ": "JWT", "kid": "load-idp"}
claims = {"iss": issuer, "aud": audience, "sub": "rider-1", "iat": now, "exp": now + 3600, "trips": ["trip-1"]}
signing_input = b64(json.dumps(header, separators=(",", ":")).encode()) + "." + b64(json.dumps(claims, separators=(",", ":")).encode())
signature = key.sign(signing_input.encode(), padding.PKCS1v15(), hashes.SHA256())
print(signing_input + "." + b64(signature))
EOF
)"

}

# prime_denials GATEWAY: sets LIMITED_PATH, FLOOD_PATH and BAD_KEY (an API key no client has), then spends the
# limited provider's one request and, with BAD_KEY, the flood provider's one failed authentication: from then on both
# answer 429. Needs API_KEY.
prime_denials() {
    LIMITED_PATH="/v1/providers/limited-fleet/tokens/consumer"
    FLOOD_PATH="/v1/providers/flood-fleet/tokens/consumer"
    BAD_KEY="tg_load_not_a_key_$(openssl rand -hex 8)"
    curl -sS --max-time 60 -o /dev/null -f -H "Authorization: Bearer $API_KEY" "$1$LIMITED_PATH?tripId=trip-1"
    local status
    status="$(curl -sS --max-time 60 -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $BAD_KEY" "$1$FLOOD_PATH?tripId=trip-1")"
    [[ $status == 401 ]] || die "the flood provider answered a bad key $status, not 401"
}
