#!/usr/bin/env bash
# The benchmark: builds release binaries, then scripts/bench.py starts its own Redis and services,
# measures the machine's limits and each stage in one run, and writes report.md, report.json and
# chart.svg under run/bench-<time>/; then scripts/bench_scale.py adds the single-node vs cluster
# comparison (scale.json, a section of report.md). Sizes: BENCH_IMPRESSIONS (20000), BENCH_POSTBACKS (10000),
# BENCH_HELD (1000000).
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
ensure_system_packages
command -v redis-benchmark >/dev/null || { echo "redis-benchmark missing (package redis-tools)"; exit 1; }
echo "==> swift build -c release"
swift build -c release 2>&1 | tail -1
BIN=$(swift build -c release --show-bin-path 2>/dev/null)
OUT="run/bench-$(date -u +%Y%m%d-%H%M%S)"
python3 scripts/bench.py "$BIN" "$OUT"
# All five services on one Redis and on a local 3-primary Redis Cluster, idle CPU, the capacity model.
python3 scripts/bench_scale.py "$BIN" "$OUT"
