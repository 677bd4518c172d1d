#!/usr/bin/env bash
# The benchmark: builds release binaries, then scripts/bench.py starts its own Redis and services,
# measures the machine's limits and each stage in one run, and writes report.md, report.json and
# chart.svg under run/bench-<time>/; then scripts/bench_scale.py adds the single-node vs cluster
# comparison (scale.json, a section of report.md), scripts/bench_isolation.py the delivery isolation
# (isolation.json) and scripts/bench_rtt.py each service's throughput with 0, 1 and 10 ms added to its
# round trips to Redis (rtt.json), each a section of report.md; scripts/bench_record.py then records the run in
# docs/benchmarks.md and docs/benchmarks/ (runs.csv, ratios.svg). The end-to-end figures come from a capacity search
# (scripts/bench_ramp.py): the offered rate is stepped up, then bisected, to the highest rate with
# ≥ 99 % accepted, accepted p99 ≤ 50 ms and no growing stream backlog. About 10 minutes on 2 cores.
# Sizes: BENCH_IMPRESSIONS (20000), BENCH_POSTBACKS (10000), BENCH_HELD (1000000); the search:
# BENCH_RAMP_STEP_SECONDS (5), BENCH_RAMP_REFINE (3), BENCH_RAMP_RETRIES (1), BENCH_BATCH (100),
# BENCH_OVERLOAD_SECONDS (4), BENCH_LATENCY_SECONDS (10); see scripts/bench.py and bench_ramp.py.
# BENCH_CONSUMERS: the stages' CONSUMERS (their default otherwise).
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
# Deliveries to answering destinations with one of four hanging, against all four answering.
python3 scripts/bench_isolation.py "$BIN" "$OUT"
# Each service's throughput with 0, 1 and 10 ms added between it and Redis, as ratios to loopback.
python3 scripts/bench_rtt.py "$BIN" "$OUT"
# The run's headline figures appended to docs/benchmarks/runs.csv, the chart redrawn, and its report
# made the latest run of docs/benchmarks.md.
python3 scripts/bench_record.py "$OUT"
