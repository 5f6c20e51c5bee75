# shellcheck shell=bash
# Shell helpers shared by the load benchmarks (run.sh, scale-out.sh); sourced, never run. They read $WORK (the
# run's scratch directory) and $ROUNDS.

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
    python3 -c 'import statistics, sys; print(statistics.median(float(v) for v in sys.argv[1:]))' "${values[@]}"
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
