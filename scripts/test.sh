#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds every executable (the end-to-end tests run
# them as real processes), runs the docs' walk-through and examples on them, runs `swift test`, then
# the short fault-injection runs (one Redis, a Redis Cluster, the cluster's nodes partitioned from each
# other, then one Redis across test hosts with network faults) and the compose test (the Docker images
# and the compose stack, on one Redis and on the cluster profile). Tests start their own redis-server
# processes (and local clusters) on free ports.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

# Each phase's heading carries the minutes since the start, so that a slow phase shows in CI's log.
STARTED=$(date +%s)
phase() { echo "==> [$((($(date +%s) - STARTED) / 60)) min] $*"; }

ensure_system_packages
phase "swift format lint (the committed .swift-format)"
swift format lint --strict --recursive Package.swift Shared Services Tools Tests
phase "ruff (scripts/pyproject.toml) and the scripts' unit tests"
ensure_ruff
python3 -m ruff check scripts
python3 -m ruff format --check scripts
python3 -m unittest discover -s scripts/tests -t scripts
phase "swift build"
swift build
BIN="$(swift build --show-bin-path)"
# The docs' own commands, before the long Swift suite so that a doc that drifted fails in seconds: the
# getting-started walk-through's sh blocks in one bash, with the Python and Node.js postback
# verification examples of docs/integrating/ad-networks.md run on its postback. The check moves the
# walk-through's fixed ports to free ones, and nothing else of this script runs meanwhile.
phase "docs: the getting-started walk-through and the postback verification examples"
python3 scripts/docs_check.py --bin "$BIN"
phase "swift test"
PIPELINE_BIN_DIR="$BIN" swift test "$@"
# The short fault-injection run: a campaign under SIGKILLs, a Redis restart, a receiver
# outage and slow answers; its ledger must account for every event and postback. Skipped when
# `swift test` was given a filter (a focused run).
if [ $# -eq 0 ]; then
    phase "fault-injection run (short form)"
    bash scripts/faults.sh --short
    # The same on a local Redis Cluster: primaries killed (replicas promoted) and partitions resharded
    # while the campaign flows; the ledger, no stage dead letters and no CROSSSLOT. Its campaign goes
    # through the batch routes (10 devices a request), so batches are held to the same ledger.
    phase "fault-injection run on a Redis Cluster (short form, batches)"
    bash scripts/faults.sh --short --cluster --batch 10
    # Partitions between the cluster's nodes (iptables between loopback addresses): a primary cut off
    # from the majority past cluster-node-timeout, twice (its replica promoted, what it took meanwhile
    # discarded), and a primary cut off from its replica only; the ledger must still pass.
    phase "fault-injection run on a Redis Cluster with partitions between its nodes (short form)"
    bash scripts/faults.sh --short --cluster --node-partitions
    # The same across a network: Redis and each service on a test host of its own (network
    # namespaces), services cut off from Redis past the command timeout, a stalled worker, 1/10/50 ms
    # added with 1 % packet loss; ingest's event route must answer 503 promptly while it is cut off.
    phase "fault-injection run across test hosts (short form, network faults)"
    bash scripts/faults.sh --short --network
    # The stack as users run it: the images (offline where no registry is reachable), compose up on one
    # Redis and on the cluster profile, a campaign under scaling and container kills, the ledger. The
    # project's image is the Dockerfile's runtime stage with the executables built and tested above
    # (compiling them again in its build stage would take longer than the rest of the compose test).
    phase "the compose test (scripts/compose-test.sh --binaries)"
    bash scripts/compose-test.sh --binaries "$BIN"
    phase "done"
fi
