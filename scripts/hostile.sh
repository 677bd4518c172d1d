#!/usr/bin/env bash
# Hostile input: a private Redis, the services and the reference receiver, then
# schemathesis over ingest's OpenAPI document (anonymous and authenticated), raw-socket abuse
# (oversized, slow and unfinished bodies, header floods, malformed HTTP, idle connections, replays,
# bad tokens, private postback URLs, extreme values) while valid signed traffic keeps flowing; first, before
# that traffic, a forged-network flood measures the Redis bytes each anonymous impression leaves (≤ 600).
# Fails if a service crashed, anything answered 5xx, a 4xx was not problem JSON, a valid event was
# not verified or a hostile one was. Report: run/hostile-*/report.md and report.json.
#
#   scripts/hostile.sh [--bin DIR] [--examples N] [--fuzz-seconds S] [--idle N] [--hold S] [--rate R] [--seed N] [--skip-fuzz]
#
# OUTDIR=DIR chooses the run directory. --bin DIR (or BIN=DIR) runs existing binaries instead of building; they are copied first, so a
# rebuild meanwhile does not change what runs. schemathesis (pinned) is installed into
# ~/.cache/attribution-pipeline/hostile-venv on first use. The run itself is the Python package
# scripts/hostile (`python3 -m hostile --help` in scripts/ describes it).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

BIN=${BIN:-}
PASS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --bin) BIN=$2; shift 2 ;;
        --examples|--fuzz-seconds|--idle|--hold|--rate|--seed) PASS+=("$1" "$2"); shift 2 ;;
        --skip-fuzz) PASS+=("$1"); shift ;;
        *) echo "usage: scripts/hostile.sh [--bin DIR] [--examples N] [--fuzz-seconds S] [--idle N] [--hold S] [--rate R] [--seed N] [--skip-fuzz]" >&2
           exit 2 ;;
    esac
done

ensure_system_packages
# The venv module is separate on Debian; schemathesis goes into a venv.
python3 -c 'import ensurepip' 2>/dev/null || {
    sudo=""; [ "$(id -u)" -eq 0 ] || sudo="sudo"
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq python3-venv >/dev/null
}
if [ -z "$BIN" ]; then
    echo "==> swift build"
    swift build
    BIN="$(swift build --show-bin-path)"
fi

OUT=${OUTDIR:-"$(pwd)/run/hostile-$(date +%Y%m%d-%H%M%S)"}
echo "==> hostile input against $BIN (run directory $OUT)"
# The run is the package scripts/hostile, run from scripts/ (where it imports the harness from), so
# both directories are made absolute first.
BIN=$(realpath "$BIN")
OUT=$(realpath -m "$OUT")
cd scripts
exec python3 -m hostile "$BIN" "$OUT" "${PASS[@]}"
