#!/usr/bin/env bash
# The integration test under docker compose, as users run the stack: the images (offline where no
# registry is reachable), `up` at a scaled time (compose.test.yaml), a simulated campaign through the
# published ingest port checked at the receiver per window and per ad network, and while it flows:
# workers scaled up, a worker container and the Redis container killed (Redis restarted from its AOF),
# on a Redis Cluster a primary's container killed (its replica promoted). Then `attribution ledger`, in
# a container, accounts for every acknowledged event and postback; Prometheus (profile observability)
# must see every replica up. `down -v` at the end, also on failure, and nothing of the project may be
# left in Docker.
#
#   scripts/compose-test.sh [--single | --tls | --cluster | --cluster-tls] [--compose v1|v2] [--public-images | --binaries DIR] [--keep]
#
# Without a form it runs three: one Redis with Compose v2 (`docker compose`), one Redis over TLS
# (compose.tls.yaml: Redis TLS only, every service with a client certificate init made), then the
# cluster profile, the last two with Compose v1.29 (`docker-compose`, Debian's), so that both Composes
# run the stack; --compose runs all on one. --cluster-tls runs the cluster profile over TLS (every node
# TLS only, between the nodes too) with the same faults; it is not in the default run: after its faults
# an install can be refused (no-eligible-impression, its conversion having overtaken its impression). --public-images builds on the public base images (swift, debian, redis,
# prom/prometheus, grafana) instead of scripts/compose-images.sh's offline ones. --binaries DIR makes the
# project's image from the executables in DIR (`swift build --show-bin-path`) on the Dockerfile's runtime
# stage instead of compiling them in its build stage: scripts/test.sh passes the ones it has just built
# and tested, so that CI compiles the package once. --keep leaves the last
# stack up for a look (`docker compose -p attribution-compose-test down -v` removes it).
# Installs the Docker engine and both Composes when missing, and starts (then stops) dockerd when none
# runs. Logs of each stack: run/compose-test-*/.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
. scripts/compose-lib.sh

MODES=(single tls cluster)
VARIANT=""
PUBLIC=false
BINARIES=""
KEEP=false
while [ $# -gt 0 ]; do
    case "$1" in
        --single) MODES=(single); shift ;;
        --tls) MODES=(tls); shift ;;
        --cluster) MODES=(cluster); shift ;;
        --cluster-tls) MODES=(cluster-tls); shift ;;
        --compose) VARIANT=$2; shift 2 ;;
        --public-images) PUBLIC=true; shift ;;
        --binaries) BINARIES=$2; shift 2 ;;
        --keep) KEEP=true; shift ;;
        *) echo "usage: scripts/compose-test.sh [--single | --tls | --cluster | --cluster-tls] [--compose v1|v2] [--public-images | --binaries DIR] [--keep]" >&2; exit 2 ;;
    esac
done
if [ "$PUBLIC" = true ] && [ -n "$BINARIES" ]; then
    echo "--public-images and --binaries exclude each other" >&2
    exit 2
fi

export COMPOSE_PROJECT_NAME=attribution-compose-test
export COMPOSE_FILE=compose.yaml:compose.test.yaml
# A scaled day lasts 3 s: the campaign's installs, second updates and first postbacks span about 15 s,
# long enough for the faults to strike while they flow; the whole campaign takes about 2.5 minutes.
export TIME_SCALE=${COMPOSE_TEST_TIME_SCALE:-28800}
export CAMPAIGN_DEVICES=${COMPOSE_TEST_DEVICES:-200}
export CAMPAIGN_SEED=11
RUN="$(pwd)/run/compose-test-$(date +%Y%m%d-%H%M%S)"
mkdir -p "$RUN"
STARTED=$(date +%s)
COMPOSE=(docker compose)
SUMMARY=()

say() { echo "  [$(($(date +%s) - STARTED)) s] $*"; }

# The project's containers, networks and volumes, whatever Compose made them.
leftovers() {
    local label="label=com.docker.compose.project=$COMPOSE_PROJECT_NAME"
    { docker ps -aq --filter "$label"; docker network ls -q --filter "$label"; docker volume ls -q --filter "$label"; } | wc -l
}

teardown() {
    local status=$?
    if [ "$KEEP" = true ] && [ $status -eq 0 ]; then
        echo "==> left up (--keep): ${COMPOSE[*]} -p $COMPOSE_PROJECT_NAME down -v"
    else
        save_logs
        "${COMPOSE[@]}" --profile cluster --profile observability --profile test --profile tools down -v \
            --remove-orphans >/dev/null 2>&1 || true
        # A `run` container that outlived its command, should one have.
        docker ps -aq --filter "label=com.docker.compose.project=$COMPOSE_PROJECT_NAME" | xargs -r docker rm -f >/dev/null
    fi
    stop_started_dockerd
    exit $status
}
trap teardown EXIT
trap 'exit 130' INT TERM

save_logs() {
    [ -n "${MODE:-}" ] || return 0
    "${COMPOSE[@]}" --profile cluster --profile observability logs --no-color >"$RUN/$MODE.log" 2>&1 || true
}

# Every running container of the stack answers its health check (the services: /ready).
wait_healthy() {  # wait_healthy SECONDS
    local deadline=$(($(date +%s) + $1)) waiting
    while :; do
        waiting=$(docker ps -q --filter "label=com.docker.compose.project=$COMPOSE_PROJECT_NAME" \
            | xargs -r docker inspect -f '{{.Name}} {{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}{{end}}' \
            | awk '$2 != "running" || ($3 != "" && $3 != "healthy") { print $1 }')
        [ -z "$waiting" ] && return 0
        if [ "$(date +%s)" -gt "$deadline" ]; then
            echo "not healthy within $1 s: $waiting" >&2
            return 1
        fi
        sleep 1
    done
}

container_of() {  # container_of SERVICE [INDEX]: the container id of one replica
    docker ps -aq --filter "label=com.docker.compose.project=$COMPOSE_PROJECT_NAME" \
        --filter "label=com.docker.compose.service=$1" --filter "label=com.docker.compose.container-number=${2:-1}"
}

# docker kill, then the container back (the engine treats a kill as a manual stop: no restart policy).
kill_and_restart() {  # kill_and_restart SERVICE [INDEX]
    local id
    id=$(container_of "$1" "${2:-1}")
    [ -n "$id" ] || { echo "no container of $1" >&2; return 1; }
    docker kill "$id" >/dev/null
    say "docker kill $1 #${2:-1}"
    sleep 1
    docker start "$id" >/dev/null
    say "$1 #${2:-1} started again"
}

operator_cli() {  # operator_cli SERVICE ARGS...: redis-cli as `operator` inside a Redis container
    local service=$1 tls=()
    shift
    # Over TLS with the operator's certificate, which init gives Redis's containers too.
    if [ "$REDIS_TLS" = true ]; then
        tls=(--tls --cacert /run/secrets/tls-ca.pem --cert /run/secrets/tls-client.pem --key /run/secrets/tls-client-key.pem)
    fi
    docker exec "$(container_of "$service")" sh -c 'REDISCLI_AUTH="$(cat /run/secrets/operator.password)" exec redis-cli --user operator --no-auth-warning "$@"' sh "${tls[@]}" "$@"
}

# A primary among redis-node-2 and -3 (the seed `redis` stays up: the services name it in REDIS_URL),
# killed; its replica must be promoted; then it is started again and rejoins as a replica.
fail_over_a_primary() {
    local node="" candidate id before after
    for candidate in redis-node-2 redis-node-3 redis-node-4 redis-node-5 redis-node-6; do
        if operator_cli "$candidate" role | head -1 | grep -q master; then node=$candidate; break; fi
    done
    [ -n "$node" ] || { echo "no primary among redis-node-2…6" >&2; return 1; }
    id=$(operator_cli "$node" cluster myid)
    before=$(operator_cli redis cluster nodes | awk -v id="$id" '$4 == id { print $1 }')
    docker kill "$(container_of "$node")" >/dev/null
    say "docker kill $node (a primary)"
    local deadline=$(($(date +%s) + 60))
    while :; do
        after=$(operator_cli redis cluster nodes | awk -v r="$before" '$1 == r && $3 ~ /master/ { print $1 }')
        [ -n "$after" ] && break
        [ "$(date +%s)" -lt "$deadline" ] || { echo "no replica of $node was promoted within 60 s" >&2; return 1; }
        sleep 0.5
    done
    say "its replica $(echo "$before" | cut -c1-8) was promoted"
    docker start "$(container_of "$node")" >/dev/null
    say "$node started again (rejoins as a replica)"
}

# Every container the stack ran, as the engine ran it (exited one-shot containers included): a
# read-only root filesystem (Grafana excepted), no capabilities but init's three, no privileges gained.
check_hardened() {
    local report
    report=$(docker ps -aq --filter "label=com.docker.compose.project=$COMPOSE_PROJECT_NAME" | xargs -r docker inspect -f \
        '{{index .Config.Labels "com.docker.compose.service"}} {{.HostConfig.ReadonlyRootfs}} {{.HostConfig.CapDrop}} {{.HostConfig.CapAdd}} {{.HostConfig.SecurityOpt}}' \
        | awk '{
            service = $1; line = $0
            ok = ($2 == "true" || service == "grafana") && line ~ /\[ALL\]/ && line ~ /no-new-privileges/
            adds = line; sub(/.*\[ALL\] /, "", adds); sub(/ \[no-new-privileges.*/, "", adds)
            if (service == "init") ok = ok && adds ~ /CHOWN/ && adds ~ /DAC_OVERRIDE/ && adds ~ /FOWNER/ && split(adds, a, " ") == 3
            else ok = ok && (adds == "[]" || adds == "<no value>")
            if (!ok) print "    " line
        }')
    if [ -n "$report" ]; then
        echo "FAILED: containers not hardened (service, read-only root, dropped, added, security options):" >&2
        echo "$report" >&2
        return 1
    fi
    say "every container: read-only root, no capabilities (init: CHOWN DAC_OVERRIDE FOWNER), no new privileges"
    SUMMARY+=("$MODE: every container hardened (read-only root, capabilities dropped, no new privileges)")
}

# Prometheus's targets: every replica of every service up, and as many as are running.
check_prometheus() {
    local url="http://127.0.0.1:$PROMETHEUS_PORT/api/v1/targets" deadline=$(($(date +%s) + 90)) verdict
    while :; do
        verdict=$(curl -fs "$url" | python3 -c '
import json, sys
expected = dict(a.split("=") for a in sys.argv[1:])
targets = json.load(sys.stdin)["data"]["activeTargets"]
up = {}
for t in targets:
    if t["health"] == "up":
        up[t["labels"]["job"]] = up.get(t["labels"]["job"], 0) + 1
print("ok" if all(up.get(j, 0) == int(n) for j, n in expected.items()) else "waiting", json.dumps(up, sort_keys=True))
' ingest=1 admin=1 verifier=3 attribution-winner=2 scheduler=1 dispatcher=1 2>/dev/null || echo "waiting {}")
        case "$verdict" in ok*) break ;; esac
        if [ "$(date +%s)" -gt "$deadline" ]; then
            echo "Prometheus does not see every replica up: ${verdict#* }" >&2
            return 1
        fi
        sleep 2
    done
    say "Prometheus: every replica up (${verdict#ok })"
    SUMMARY+=("$MODE: Prometheus targets up ${verdict#ok }")
}

run_stack() {  # run_stack single|tls|cluster|cluster-tls
    MODE=$1
    local services=(init redis ingest admin verifier attribution-winner scheduler dispatcher receiver) profiles=()
    export COMPOSE_FILE=compose.yaml:compose.test.yaml REDIS_TLS=false
    if [ "$MODE" = cluster ] || [ "$MODE" = cluster-tls ]; then
        export REDIS_CLUSTER=true
        services+=(redis-node-2 redis-node-3 redis-node-4 redis-node-5 redis-node-6 redis-cluster-init)
        profiles=(--profile cluster)
        if [ "$MODE" = cluster-tls ]; then
            # compose.tls.yaml: every node TLS only, between the nodes too.
            export COMPOSE_FILE=compose.yaml:compose.test.yaml:compose.tls.yaml REDIS_TLS=true
        fi
    elif [ "$MODE" = tls ]; then
        # compose.tls.yaml: Redis TLS only, every service with its own client certificate.
        export REDIS_CLUSTER=false COMPOSE_FILE=compose.yaml:compose.test.yaml:compose.tls.yaml REDIS_TLS=true
    else
        export REDIS_CLUSTER=false
        # Grafana has no offline image: Prometheus alone offline, both with the public images.
        services+=(prometheus)
        [ "$PUBLIC" = true ] && services+=(grafana)
        profiles=(--profile observability)
    fi
    export INGEST_PORT ADMIN_PORT RECEIVER_PORT PROMETHEUS_PORT GRAFANA_PORT
    INGEST_PORT=$(free_port) ADMIN_PORT=$(free_port) RECEIVER_PORT=$(free_port) PROMETHEUS_PORT=$(free_port) \
        GRAFANA_PORT=$(free_port)
    echo "==> $MODE Redis: ${COMPOSE[*]} up at TIME_SCALE=$TIME_SCALE (ingest on 127.0.0.1:$INGEST_PORT)"
    "${COMPOSE[@]}" "${profiles[@]}" up -d "${services[@]}" >"$RUN/$MODE-up.log" 2>&1 \
        || { cat "$RUN/$MODE-up.log" >&2; return 1; }
    wait_healthy 240
    say "every service ready"
    check_hardened || return 1

    "${COMPOSE[@]}" run --rm campaign >"$RUN/$MODE-campaign.log" 2>&1 &
    local campaign=$!
    until grep -q "devices at time scale" "$RUN/$MODE-campaign.log" 2>/dev/null; do
        kill -0 $campaign 2>/dev/null || { cat "$RUN/$MODE-campaign.log" >&2; return 1; }
        sleep 0.5
    done
    say "campaign of $CAMPAIGN_DEVICES devices started"
    sleep 2
    "${COMPOSE[@]}" "${profiles[@]}" up -d --no-deps --no-recreate --scale verifier=3 --scale attribution-winner=2 \
        verifier attribution-winner >>"$RUN/$MODE-up.log" 2>&1
    say "scaled: verifier=3, attribution-winner=2"
    kill_and_restart verifier 1
    if [ "$REDIS_CLUSTER" = true ]; then
        fail_over_a_primary
    else
        kill_and_restart redis
        wait_healthy 60
        say "redis healthy again, from its AOF"
    fi
    kill_and_restart attribution-winner 2
    wait_healthy 120
    local status=0
    wait $campaign || status=$?
    sed -n '/postbacks per window/,$p' "$RUN/$MODE-campaign.log"
    if [ $status -ne 0 ]; then
        # What the ledger makes of it tells a postback still in flight from an event lost.
        echo "FAILED: the postbacks at the receiver differ from what the campaign expects; the ledger:" >&2
        "${COMPOSE[@]}" run --rm ledger >"$RUN/$MODE-ledger.log" 2>&1 || true
        grep -v '^Creating\|^Starting\|^Container\|is up-to-date' "$RUN/$MODE-ledger.log" | sed 's/^/    /' >&2
        save_logs
        return 1
    fi
    SUMMARY+=("$MODE: postbacks as expected per window and per ad network:")
    while read -r line; do SUMMARY+=("  $line"); done < <(grep '^window [0-9]:' "$RUN/$MODE-campaign.log")

    say "ledger (in a container, once the pipeline is idle)"
    if ! "${COMPOSE[@]}" run --rm ledger >"$RUN/$MODE-ledger.log" 2>&1; then
        cat "$RUN/$MODE-ledger.log" >&2
        echo "FAILED: the ledger" >&2
        return 1
    fi
    grep -v '^Creating\|^Starting\|^Container\|is up-to-date' "$RUN/$MODE-ledger.log" | sed 's/^/    /'
    SUMMARY+=("$MODE: $(grep -m1 '^LEDGER' "$RUN/$MODE-ledger.log")")
    say "stream messages against their schemas (read in the ledger's container, validated here)"
    # Expanded by the container's shell; the stream names are the validator's.
    local streams='case "$REDIS_CLUSTER" in true|yes|1) cluster=--cluster ;; *) cluster= ;; esac
        case "$REDIS_TLS" in true|yes|1) scheme=rediss; export REDIS_TLS_CA_FILE=/run/secrets/tls-ca.pem \
            REDIS_TLS_CERT_FILE=/run/secrets/tls-client.pem REDIS_TLS_KEY_FILE=/run/secrets/tls-client-key.pem \
            REDIS_TLS_SERVER_NAME=redis ;;
            *) scheme=redis ;; esac
        for stream in '"$(python3 scripts/message_schemas.py --streams)"'; do
            attribution stream "$stream" --redis-url "$scheme://operator@redis:6379/0" $cluster \
                --redis-password-file /run/secrets/redis-password || exit 1
        done'
    if ! "${COMPOSE[@]}" run --rm --entrypoint sh ledger -c "$streams" >"$RUN/$MODE-streams.out" 2>"$RUN/$MODE-streams.log"; then
        cat "$RUN/$MODE-streams.log" >&2
        echo "FAILED: reading the streams back" >&2
        return 1
    fi
    grep '^{' "$RUN/$MODE-streams.out" >"$RUN/$MODE-streams.jsonl" || true
    if ! python3 scripts/message_schemas.py "$RUN/$MODE-streams.jsonl" >"$RUN/$MODE-schemas.log"; then
        head -20 "$RUN/$MODE-schemas.log" >&2
        echo "FAILED: stream messages that break their schemas (docs/reference/messages/)" >&2
        return 1
    fi
    sed 's/^/    /' "$RUN/$MODE-schemas.log"
    SUMMARY+=("$MODE: $(tail -1 "$RUN/$MODE-schemas.log")")
    [ "$MODE" = single ] && check_prometheus
    if [ "$MODE" = single ]; then
        # The operator's admin client in its container, with the token compose hands it.
        say "attribution admin (the operator's container): the campaign's ad networks are registered"
        "${COMPOSE[@]}" --profile tools run --rm operator attribution admin ad-network get \
            sim-network-1.adattributionkit --admin-url http://admin:8081 >"$RUN/admin-client.log" 2>&1 \
            && grep -q '"postback-url"' "$RUN/admin-client.log" \
            || { cat "$RUN/admin-client.log" >&2; echo "FAILED: attribution admin in the operator container" >&2; return 1; }
        SUMMARY+=("single: attribution admin in the operator container: OK")
    fi

    save_logs
    if [ "$KEEP" = true ] && [ "$MODE" = "${MODES[-1]}" ]; then return 0; fi
    "${COMPOSE[@]}" --profile cluster --profile observability --profile test --profile tools down -v --remove-orphans \
        >>"$RUN/$MODE-up.log" 2>&1
    local left
    left=$(leftovers)
    [ "$left" -eq 0 ] || { echo "FAILED: $left containers, networks or volumes left after down -v" >&2; return 1; }
    say "down -v: no container, network or volume of the project left"
}

ensure_system_packages
ensure_docker
if [ "$PUBLIC" = true ]; then
    echo "==> the project's image on the public base images"
    build_project_image
elif [ -n "$BINARIES" ]; then
    bash scripts/compose-images.sh --no-env --no-swift
else
    bash scripts/compose-images.sh --no-env --no-project
    export SWIFT_IMAGE=attribution-offline/swift:bookworm
fi
if [ "$PUBLIC" = false ]; then
    export BASE_IMAGE=attribution-offline/debian:bookworm
    export REDIS_IMAGE=attribution-offline/redis:7 PROMETHEUS_IMAGE=attribution-offline/prometheus:2
fi
REVISION=$(git rev-parse HEAD 2>/dev/null || echo unknown)
export REVISION
select_compose
if [ -n "$BINARIES" ]; then
    echo "==> the project's image: the Dockerfile's runtime stage and the executables in $BINARIES"
    build_project_image_from "$BINARIES"
else
    echo "==> the project's image, built by Compose"
    # The classic builder: Debian's engine has no buildx plugin.
    DOCKER_BUILDKIT=0 COMPOSE_DOCKER_CLI_BUILD=0 "${COMPOSE[@]}" build init >"$RUN/build.log" 2>&1 \
        || { tail -30 "$RUN/build.log" >&2; exit 1; }
fi
report_image_sizes

for mode in "${MODES[@]}"; do
    if [ -n "$VARIANT" ]; then
        COMPOSE_VARIANT=$VARIANT
    elif [ "$mode" = single ]; then
        COMPOSE_VARIANT=v2
    else
        COMPOSE_VARIANT=v1
    fi
    select_compose
    run_stack "$mode"
done
echo "==> compose test passed in $(($(date +%s) - STARTED)) s"
for line in "${SUMMARY[@]}"; do echo "    $line"; done
