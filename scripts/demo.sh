#!/usr/bin/env bash
# The main job: a local Redis, the five services and the reference receiver, a simulated campaign,
# and a summary of the signed postbacks the receiver verified (scripts/demo.py). Stops everything it
# started.
#
#   scripts/demo.sh [--devices N] [--time-scale S] [--cluster] [--tls]
#
# --cluster runs it on a local Redis Cluster instead: six redis-server nodes (3 primaries, each with a
# replica) made into a cluster by `redis-cli --cluster create`, the services with REDIS_CLUSTER=true.
# --tls runs it on a Redis (or with --cluster, a cluster whose nodes speak TLS to each other too) that
# is TLS only and demands client certificates: a CA and certificates made for the run (openssl), the
# services on rediss:// with REDIS_TLS_CA_FILE, _CERT_FILE, _KEY_FILE.
#
# The time scale divides every lifecycle duration: at 86400 a day lasts a second, so all three
# conversion windows (35 days) and their delays play out in under a minute.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

ARGS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --devices|--time-scale) ARGS+=("$1" "$2"); shift 2 ;;
        --cluster|--tls) ARGS+=("$1"); shift ;;
        *) echo "usage: scripts/demo.sh [--devices N] [--time-scale S] [--cluster] [--tls]" >&2; exit 2 ;;
    esac
done

ensure_system_packages
echo "==> swift build"
swift build
BIN="$(swift build --show-bin-path)"
# The launching, the campaign and the summary: scripts/demo.py, on the launcher the other runs share
# (scripts/harness.py). It stops everything it started, also on Ctrl-C.
exec python3 scripts/demo.py "$BIN" "$(pwd)/run/demo-$(date +%Y%m%d-%H%M%S)" "${ARGS[@]}"
