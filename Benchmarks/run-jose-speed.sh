#!/usr/bin/env bash
# Builds the JOSE speed benchmark in release mode and runs it: TokenGate RS256/ES256/EdDSA sign and verify
# operations per second on one core, next to `openssl speed` on the same machine.
# Usage: Benchmarks/run-jose-speed.sh [--seconds S] [--rounds N] [--no-openssl]
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --package-path Benchmarks --product jose-speed
exec "$(swift build -c release --package-path Benchmarks --show-bin-path)/jose-speed" "$@"
