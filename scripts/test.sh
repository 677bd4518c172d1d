#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds every executable (the end-to-end tests run
# them as real processes), runs the docs' walk-through and examples on them, runs `swift test`, then
# the short fault-injection runs (one Redis and a Redis Cluster over TLS, one Redis, a Redis Cluster,
# the cluster's nodes partitioned from each other, then one Redis across test hosts with network
# faults) and the compose test (the Docker images and the compose stack, on one Redis, over TLS and on
# the cluster profile). Tests start their own redis-server processes (and local clusters) on free ports.
#
# A failing phase does not stop the run: every phase whose prerequisites passed still runs (everything
# after `swift build` needs it; nothing else depends on another phase), and the run ends with one line
# per phase (passed, failed or not run, and how long it took) and exits non-zero if any failed.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
. scripts/lib.sh

STARTED=$(date +%s)
SUMMARY=()
FAILED=0
BUILT=0

# run_phase NAME NEEDS_BUILD LIMIT COMMAND...: runs COMMAND, heading its output with the minutes since
# the start (a slow phase shows in CI's log), and records its outcome for the summary. A phase still
# running after LIMIT minutes (about three times its usual length on 2 cores) is stopped with its whole
# process group and counts as failed: the processes it left are listed first, so a hang names itself
# and the phases after it still run within CI's limit.
run_phase() {
    local name=$1 needs_build=$2 limit=$3
    shift 3
    local began
    began=$(date +%s)
    if [ "$needs_build" = 1 ] && [ "$BUILT" != 1 ]; then
        SUMMARY+=("NOT RUN  $name (needs swift build, which failed)")
        FAILED=1
        return 1
    fi
    echo "==> [$(((began - STARTED) / 60)) min] $name"
    timeout --kill-after=30 "${limit}m" "$@"
    local status=$?
    local took=$(($(date +%s) - began))
    local verdict="passed  " detail=""
    if [ $status -ne 0 ]; then
        verdict="FAILED  "
        FAILED=1
        detail=", exit $status"
    fi
    if [ $status -eq 124 ] || [ $status -eq 137 ]; then
        detail=", stopped after its limit of $limit min"
        echo "==> $name: still running after $limit min; what was running:" >&2
        ps -eo pid,ppid,etime,time,args --forest | grep -v " ps -eo" | cut -c1-240 >&2
    fi
    SUMMARY+=("$(printf '%s %s (%d min %02d s%s)' "$verdict" "$name" $((took / 60)) $((took % 60)) "$detail")")
    [ $status -eq 0 ]
}

ensure_system_packages || exit 1
# The machine's speed, for the record and for the tests' timing messages: a test that waits on real
# processes says how fast the machine was (docs/benchmarks.md records the reference machine's rate).
MACHINE_P256_VERIFY_PER_SECOND=$(machine_p256_verify_rate)
export MACHINE_P256_VERIFY_PER_SECOND
echo "==> this machine: openssl ECDSA P-256 ${MACHINE_P256_VERIFY_PER_SECOND} verifies/s on one core"

run_phase "swift format lint (the committed .swift-format)" 0 5 \
    swift format lint --strict --recursive Package.swift Shared Services Tools Tests
python_checks() {
    ensure_ruff && python3 -m ruff check scripts && python3 -m ruff format --check scripts \
        && python3 scripts/embed_openapi.py --check
}
run_phase "ruff (scripts/pyproject.toml), the embedded OpenAPI document" 0 5 \
    bash -c ". scripts/lib.sh; $(declare -f python_checks); python_checks"
run_phase "swift build" 0 40 swift build && BUILT=1
BIN="$(swift build --show-bin-path)"
# deploy/kubernetes: rendered, validated against the Kubernetes API's schemas, held to the code (the
# executables' --help); it installs kubectl and kubernetes-validate (with PyYAML, which the unit tests
# of its rules import) first.
run_phase "the Kubernetes manifests (scripts/kubernetes-check.sh)" 1 5 bash scripts/kubernetes-check.sh "$BIN"
# After the build: the harness starts Redis with the built `attribution-bench redis`.
run_phase "the scripts' unit tests (scripts/tests)" 1 10 \
    env PIPELINE_BIN_DIR="$BIN" python3 -m unittest discover -s scripts/tests -t scripts
# The docs' own commands, before the long Swift suite so that a doc that drifted fails in seconds: the
# getting-started walk-through's sh blocks in one bash, with the Python and Node.js postback
# verification examples of docs/integrating/ad-networks.md run on its postback. The check moves the
# walk-through's fixed ports to free ones, and nothing else of this script runs meanwhile.
run_phase "docs: the getting-started walk-through and the postback verification examples" 1 10 \
    python3 scripts/docs_check.py --bin "$BIN"
run_phase "swift test" 1 45 env PIPELINE_BIN_DIR="$BIN" swift test "$@"
# The OpenAPI document as a client meets it (OpenAPIKit's validation, a client generated from it driving
# admin and ingest): a package of its own, so its generator never enters the pipeline's build. Skipped
# in a focused run.
if [ $# -eq 0 ]; then
    run_phase "the generated OpenAPI client (Tests/OpenAPIClient)" 1 25 \
        env PIPELINE_BIN_DIR="$BIN" swift test --package-path Tests/OpenAPIClient
fi
# The short fault-injection run: a campaign under SIGKILLs, a Redis restart, a receiver
# outage and slow answers; its ledger must account for every event and postback. Skipped when
# `swift test` was given a filter (a focused run).
if [ $# -eq 0 ]; then
    run_phase "fault-injection run (short form)" 1 8 bash scripts/faults.sh --short
    # The same on a Redis that is TLS only and demands client certificates: the services' TLS
    # connections through Redis's SIGKILL and its restart from the append-only file.
    run_phase "fault-injection run on TLS to Redis (short form)" 1 8 bash scripts/faults.sh --short --tls
    # And on a Redis Cluster that is TLS only, between its nodes too: a primary killed, partitions
    # resharded, every connection of the router TLS.
    run_phase "fault-injection run on TLS to a Redis Cluster (short form)" 1 8 bash scripts/faults.sh --short --cluster --tls
    # The same on a local Redis Cluster: primaries killed (replicas promoted) and partitions resharded
    # while the campaign flows; the ledger, no stage dead letters and no CROSSSLOT. Its campaign goes
    # through the batch routes (10 devices a request), so batches are held to the same ledger.
    run_phase "fault-injection run on a Redis Cluster (short form, batches)" 1 8 \
        bash scripts/faults.sh --short --cluster --batch 10
    # Partitions between the cluster's nodes (iptables between loopback addresses): a primary cut off
    # from the majority past cluster-node-timeout, twice (its replica promoted, what it took meanwhile
    # discarded), and a primary cut off from its replica only; the ledger must still pass.
    run_phase "fault-injection run on a Redis Cluster with partitions between its nodes (short form)" 1 8 \
        bash scripts/faults.sh --short --cluster --node-partitions
    # The same across a network: Redis and each service on a test host of its own (network
    # namespaces), services cut off from Redis past the command timeout, a stalled worker, 1/10/50 ms
    # added with 1 % packet loss; ingest's event route must answer 503 promptly while it is cut off.
    run_phase "fault-injection run across test hosts (short form, network faults)" 1 8 \
        bash scripts/faults.sh --short --network
    # The stack as users run it: the images (offline where no registry is reachable), compose up on one
    # Redis (in plaintext and over TLS) and on the cluster profile, a campaign under scaling and
    # container kills, the ledger. The
    # project's image is the Dockerfile's runtime stage with the executables built and tested above
    # (compiling them again in its build stage would take longer than the rest of the compose test).
    run_phase "the compose test (scripts/compose-test.sh --binaries)" 1 35 bash scripts/compose-test.sh --binaries "$BIN"
fi

total=$(($(date +%s) - STARTED))
echo "==> summary after $((total / 60)) min $((total % 60)) s (openssl P-256 ${MACHINE_P256_VERIFY_PER_SECOND} verifies/s):"
for line in "${SUMMARY[@]}"; do echo "    $line"; done
exit $FAILED
