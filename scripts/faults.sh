#!/usr/bin/env bash
# The fault-injection run: a simulated campaign while every service is SIGKILLed in turn, Redis is
# killed and restarted from its AOF, the receiver is down for a scaled day and answers slowly; then a
# ledger accounts for every acknowledged event and every due postback. Exits non-zero on anything
# unaccounted or delivered twice. Report: run/faults-*/report.md.
#
#   scripts/faults.sh [--short] [--devices N] [--time-scale S] [--cluster [--node-partitions] | --network] [--tls] [--batch N]
#
# Defaults: 600 devices, a day lasts 3 s (about 3 minutes). --short is the form CI runs
# (scripts/test.sh): 150 devices, a day per second (under a minute). --cluster runs on a local Redis
# Cluster (3 primaries, 3 replicas) with failover and resharding as the faults. --batch N sends the
# campaign N devices per request through the batch routes. --network runs Redis and each service on a
# test host of its own (network namespaces; needs root) and cuts links, drops packets and stalls
# processes instead (see scripts/faults.py). --cluster --node-partitions cuts the cluster's nodes off
# from each other instead of killing them (a primary from the majority, a primary from its replica).
# --tls runs the default faults (or --cluster's) on a Redis that is TLS only and demands client certificates.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

ARGS=()
while [ $# -gt 0 ]; do
    case "$1" in
        --short) ARGS+=(--devices 150 --time-scale 86400); shift ;;
        --devices|--time-scale|--batch) ARGS+=("$1" "$2"); shift 2 ;;
        --cluster|--network|--node-partitions|--tls) ARGS+=("$1"); shift ;;
        *) echo "usage: scripts/faults.sh [--short] [--devices N] [--time-scale S] [--cluster [--node-partitions] | --network] [--tls] [--batch N]" >&2; exit 2 ;;
    esac
done

ensure_system_packages
echo "==> swift build"
swift build
BIN="$(swift build --show-bin-path)"
OUT="$(pwd)/run/faults-$(date +%Y%m%d-%H%M%S)"
STATUS=0
python3 scripts/faults.py "$BIN" "$OUT" "${ARGS[@]}" || STATUS=$?
echo "    report, logs and received postbacks: $OUT"
exit $STATUS
