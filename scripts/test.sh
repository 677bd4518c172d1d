#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds every executable (the end-to-end tests run
# them as real processes), runs `swift test`, then the short fault-injection runs (one Redis, a Redis
# Cluster, the cluster's nodes partitioned from each other, then one Redis across test hosts with
# network faults) and the compose test (the Docker images and the compose stack, on one Redis and on the
# cluster profile). Tests start their own redis-server processes (and local clusters) on free ports.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh

ensure_system_packages
echo "==> swift format lint (the committed .swift-format)"
swift format lint --strict --recursive Package.swift Shared Services Tools Tests
echo "==> swift build"
swift build
echo "==> swift test"
PIPELINE_BIN_DIR="$(swift build --show-bin-path)" swift test "$@"
# The short fault-injection run: a campaign under SIGKILLs, a Redis restart, a receiver
# outage and slow answers; its ledger must account for every event and postback. Skipped when
# `swift test` was given a filter (a focused run).
if [ $# -eq 0 ]; then
    echo "==> fault-injection run (short form)"
    bash scripts/faults.sh --short
    # The same on a local Redis Cluster: primaries killed (replicas promoted) and partitions resharded
    # while the campaign flows; the ledger, no stage dead letters and no CROSSSLOT. Its campaign goes
    # through the batch routes (10 devices a request), so batches are held to the same ledger.
    echo "==> fault-injection run on a Redis Cluster (short form, batches)"
    bash scripts/faults.sh --short --cluster --batch 10
    # Partitions between the cluster's nodes (iptables between loopback addresses): a primary cut off
    # from the majority past cluster-node-timeout, twice (its replica promoted, what it took meanwhile
    # discarded), and a primary cut off from its replica only; the ledger must still pass.
    echo "==> fault-injection run on a Redis Cluster with partitions between its nodes (short form)"
    bash scripts/faults.sh --short --cluster --node-partitions
    # The same across a network: Redis and each service on a test host of its own (network
    # namespaces), services cut off from Redis past the command timeout, a stalled worker, 1/10/50 ms
    # added with 1 % packet loss; ingest's event route must answer 503 promptly while it is cut off.
    echo "==> fault-injection run across test hosts (short form, network faults)"
    bash scripts/faults.sh --short --network
    # The stack as users run it: the images (offline where no registry is reachable), compose up on one
    # Redis and on the cluster profile, a campaign under scaling and container kills, the ledger.
    echo "==> the compose test (scripts/compose-test.sh)"
    bash scripts/compose-test.sh
fi
