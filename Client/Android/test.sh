#!/usr/bin/env bash
# Builds TokenGate's Android client library (Client/Android/, plain Java 11) and runs its JUnit 5 tests against the
# real gateway, started by the tests on loopback. Needs Debian's openjdk-17-jdk-headless and junit5 (installed here
# with apt-get when running as root; otherwise the exact command is printed and the script exits 2), and the built
# gateway binary in TOKENGATE_BINARY:
#
#   TOKENGATE_BINARY="$(swift build --show-bin-path)/tokengate" Client/Android/test.sh
#
# Extra arguments go to JUnit's console launcher, e.g. `--exclude-tag fleet-engine-ids` or
# `--select-method dev.tokengate.android.TokenProviderErrorTest#anUnknownProviderIsNotFound`. Everything it writes
# goes to Client/Android/build/ (git-ignored): the classes, build/tokengate-android.jar for an app's libs/, the API
# reference in build/javadoc/, test reports, and the gateway's log and configuration (GATEWAY_ARTIFACTS moves those).
set -euo pipefail
cd "$(dirname "$0")"

missing=()
for package in openjdk-17-jdk-headless junit5; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing+=("$package")
done
if [ ${#missing[@]} -gt 0 ]; then
    if [ "$(id -u)" -eq 0 ]; then
        echo "==> installing ${missing[*]}"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
    else
        echo "The Android client's tests need: ${missing[*]}. Install them with:" >&2
        echo "    sudo apt-get install -y ${missing[*]}" >&2
        exit 2
    fi
fi
if [ -z "${TOKENGATE_BINARY:-}" ] || [ ! -x "$TOKENGATE_BINARY" ]; then
    echo "Set TOKENGATE_BINARY to a built tokengate (e.g. \"\$(swift build --show-bin-path)/tokengate\")." >&2
    exit 2
fi
# Debian's JDK 17, whatever java the PATH or JAVA_HOME name (TOKENGATE_ANDROID_JDK overrides it), and junit5's
# console launcher, whose manifest names the engine jars beside it.
JDK="${TOKENGATE_ANDROID_JDK:-/usr/lib/jvm/java-17-openjdk-$(dpkg --print-architecture)}"
JUNIT=/usr/share/java/junit-platform-console-standalone.jar
for tool in "$JDK/bin/javac" "$JDK/bin/java" "$JDK/bin/javap" "$JDK/bin/jar" "$JDK/bin/javadoc" "$JUNIT"; do
    [ -e "$tool" ] || { echo "missing $tool (openjdk-17-jdk-headless, junit5)" >&2; exit 2; }
done

rm -rf build
mkdir -p build/classes build/test-classes build/reports

echo "==> Client/Android: the library (javac --release 11, every lint a failure)"
find src/main/java -name '*.java' | sort > build/main-sources.txt
# String concatenation as StringBuilder calls (not Java 9's invokedynamic), as every Android toolchain reads it.
"$JDK/bin/javac" --release 11 -Xlint:all -Werror -encoding UTF-8 -XDstringConcat=inline -d build/classes \
    @build/main-sources.txt

echo "==> Client/Android: build/tokengate-android.jar and its API reference (javadoc; a broken link or tag fails)"
"$JDK/bin/jar" --create --file build/tokengate-android.jar -C build/classes .
"$JDK/bin/javadoc" -quiet -Xdoclint:all,-missing -Werror --release 11 -encoding UTF-8 -d build/javadoc \
    -sourcepath src/main/java dev.tokengate.android

# --release 11 checks against Java 11's API, not Android's: refuse what Android lacks (or has only from API 24 to 33)
# so that the library runs on every device the Mobility SDKs support.
echo "==> Client/Android: no API Android lacks (java.net.http, java.util.function, java.time, CompletableFuture, …)"
forbidden='java/net/http/|java/util/function/|java/time/|java/util/stream/|java/util/Optional|java/util/Base64'
forbidden+='|java/util/concurrent/CompletableFuture|java/io/UncheckedIOException|java/lang/invoke/StringConcatFactory'
forbidden+='|org/json/|java/lang/String\.(isBlank|strip[A-Za-z]*|repeat|lines):'
forbidden+='|java/io/InputStream\.(readAllBytes|readNBytes|transferTo):|java/util/(List|Set|Map)\.(of|copyOf|entry):'
forbidden+='|java/util/concurrent/ConcurrentHashMap\.(computeIfAbsent|compute|merge):'
classes=$(cd build/classes && find . -name '*.class' | sed 's|^\./||; s|\.class$||; s|/|.|g')
# shellcheck disable=SC2086 # one argument per class name
"$JDK/bin/javap" -c -p -v -cp build/classes $classes > build/javap.txt
if grep -nE "$forbidden" build/javap.txt; then
    echo "the library uses an API Android does not have (above)" >&2
    exit 1
fi

echo "==> Client/Android: the tests"
find src/test/java -name '*.java' | sort > build/test-sources.txt
"$JDK/bin/javac" --release 11 -Xlint:all -Xlint:-path -Werror -encoding UTF-8 -d build/test-classes \
    -cp "build/classes:$JUNIT" @build/test-sources.txt

echo "==> Client/Android: JUnit 5 against the real gateway ($TOKENGATE_BINARY)"
# The tests kill the gateway they start and delete its keys; this trap does both too if the JVM itself is killed. The
# run's temporary directory is under TMPDIR (scripts/test points that at a directory of its own).
export GATEWAY_PID_FILE="$PWD/build/gateway.pids" GATEWAY_ARTIFACTS="${GATEWAY_ARTIFACTS:-$PWD/build/gateway}"
run_tmp="$(mktemp -d "${TMPDIR:-/tmp}/tokengate-android.XXXXXX")"
cleanup() {
    if [ -f "$GATEWAY_PID_FILE" ]; then
        while read -r pid; do kill -9 "$pid" 2>/dev/null || true; done < "$GATEWAY_PID_FILE"
    fi
    rm -rf "$run_tmp"
}
trap cleanup EXIT
status=0
timeout --kill-after=15 300 "$JDK/bin/java" -Djava.io.tmpdir="$run_tmp" -jar "$JUNIT" \
    --disable-banner --disable-ansi-colors --details=tree --exclude-engine=junit-vintage \
    --class-path build/classes:build/test-classes --select-package dev.tokengate.android \
    --reports-dir build/reports \
    --config junit.jupiter.execution.timeout.default=60s "$@" | tee build/junit.txt || status=$?
# One closing line a CI log reader counts: "android: N passed, N failed, N skipped".
passed=$(sed -n 's/^\[ *\([0-9]*\) tests successful *\]$/\1/p' build/junit.txt)
failed=$(sed -n 's/^\[ *\([0-9]*\) tests failed *\]$/\1/p' build/junit.txt)
skipped=$(sed -n 's/^\[ *\([0-9]*\) tests skipped *\]$/\1/p' build/junit.txt)
echo "android: ${passed:-0} passed, ${failed:-0} failed, ${skipped:-0} skipped"
exit "$status"
