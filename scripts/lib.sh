# Shared by scripts/serve and scripts/test: make sure the system packages TokenGate builds and tests with exist.
# Installs them with apt-get when running as root; otherwise prints the exact command and stops.

ensure_debian_packages() {
    local missing=()
    local package
    for package in "$@"; do
        dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if [ "$(id -u)" -eq 0 ]; then
        echo "==> installing ${missing[*]}"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    else
        echo "TokenGate needs: ${missing[*]}. Install them with:" >&2
        echo "    sudo apt-get install -y ${missing[*]}" >&2
        exit 2
    fi
}

ensure_swift() {
    if ! command -v swift >/dev/null 2>&1; then
        echo "TokenGate needs Swift 6.2 or later on PATH (https://www.swift.org/install/linux/)." >&2
        exit 2
    fi
}

# Python's cryptography package: the interop tests use it, and Fuzz/make-seeds.py makes the fuzzers' keys with it.
ensure_python_cryptography() {
    python3 -c "import cryptography" 2>/dev/null && return 0
    if [ "$(id -u)" -eq 0 ]; then
        echo "==> installing python3 cryptography"
        python3 -m pip install --quiet cryptography 2>/dev/null || ensure_debian_packages python3-cryptography
    else
        echo "TokenGate's tests and fuzzers need Python's cryptography package: python3 -m pip install cryptography" >&2
        exit 2
    fi
}

# swift-testing starts every test at once unless told otherwise. On a 2-core machine some 600 tests then share two
# cooperative threads round-robin, and a test that needs many turns (a yield loop, a poll, a pipe read) waits about
# as long as the whole run: past its own time limit once the machine is busier than usual (CI failed that way on
# AuthRemoteKeySetTests). Six tests per core at a time keep each test's wait to its own peers; the run got faster
# too (3m12s against 3m40s here). A width the caller sets wins.
bound_test_parallelism() {
    export SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH="${SWT_EXPERIMENTAL_MAXIMUM_PARALLELIZATION_WIDTH:-$(($(nproc) * 6))}"
}

# Points TMPDIR at a directory of this run's own, removed when the calling script exits however it ends: the tests,
# SwiftPM (whose build and test commands each left a TemporaryDirectory.* in /tmp here) and every tool they start
# write their temporary files there, so a run leaves nothing behind in /tmp.
use_private_tmpdir() {
    RUN_TMPDIR="$(mktemp -d "${TMPDIR:-/tmp}/tokengate-run.XXXXXX")"
    export TMPDIR="$RUN_TMPDIR"
    trap 'rm -rf "$RUN_TMPDIR"' EXIT
}
