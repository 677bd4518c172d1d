#!/usr/bin/env bash
# The offline path to compose's images, for machines that reach no image registry (only Debian's
# package archive): builds every base image that the Dockerfile and compose.yaml name, from Debian's
# packages and the Swift toolchain on this machine, then the project's own image on them.
#
#   scripts/compose-images.sh [--rebuild] [--no-env] [--no-project] [--no-swift]
#
# Images (each skipped when it already exists with the same inputs; --rebuild makes them anew):
#   attribution-offline/debian:bookworm     debootstrap --variant=minbase bookworm, slimmed as
#                                           debian:bookworm-slim is (no docs, man pages or locales)
#   attribution-offline/swift:bookworm      that, the build packages Swift needs, this machine's
#                                           toolchain (`swift` on PATH, without its IDE and debugger
#                                           parts) and the git mirror of Swift packages git is set to
#                                           read github.com from (git config url.*.insteadOf), if any
#   attribution-offline/redis:7             Debian's redis-server, run as uid 999 as redis:7's is
#   attribution-offline/prometheus:2        Debian's prometheus, its entrypoint where prom/prometheus
#                                           has it
# Grafana is not in Debian: the observability profile's Grafana needs the public image.
#
# The names go into .env (compose reads it; other lines there are kept) as SWIFT_IMAGE, BASE_IMAGE,
# REDIS_IMAGE and PROMETHEUS_IMAGE, unless --no-env (then export them yourself, as
# scripts/compose-test.sh does). Last, `docker build` makes attribution-pipeline:latest on them
# (unless --no-project) and the runtime image's size is printed. --no-swift (which implies --no-project)
# leaves out the Swift image, for a project image made from executables built outside Docker.
set -euo pipefail
cd "$(dirname "$0")/.."
. scripts/lib.sh
. scripts/compose-lib.sh

REBUILD=false
WRITE_ENV=true
PROJECT=true
SWIFT=true
while [ $# -gt 0 ]; do
    case "$1" in
        --rebuild) REBUILD=true; shift ;;
        --no-env) WRITE_ENV=false; shift ;;
        --no-project) PROJECT=false; shift ;;
        --no-swift) SWIFT=false; PROJECT=false; shift ;;
        *) echo "usage: scripts/compose-images.sh [--rebuild] [--no-env] [--no-project] [--no-swift]" >&2; exit 2 ;;
    esac
done

MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm
export BASE_IMAGE=attribution-offline/debian:$SUITE
export SWIFT_IMAGE=attribution-offline/swift:$SUITE
export REDIS_IMAGE=attribution-offline/redis:7
export PROMETHEUS_IMAGE=attribution-offline/prometheus:2

ensure_docker
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT

# The label `inputs` on each image records what it was made from; a match means it is current.
current() {  # current IMAGE INPUTS
    [ "$REBUILD" = false ] && [ "$(docker image inspect -f '{{index .Config.Labels "inputs"}}' "$1" 2>/dev/null)" = "$2" ]
}

base_image() {
    local inputs="debootstrap minbase $SUITE $MIRROR, slim 2"
    if current "$BASE_IMAGE" "$inputs"; then echo "==> $BASE_IMAGE is current"; return; fi
    command -v debootstrap >/dev/null 2>&1 || install_packages debootstrap
    echo "==> $BASE_IMAGE: debootstrap --variant=minbase $SUITE from $MIRROR"
    local root="$WORK/rootfs"
    # As debian:bookworm-slim: no documentation, man pages or translations are ever unpacked.
    mkdir -p "$root/etc/dpkg/dpkg.cfg.d"
    cat >"$root/etc/dpkg/dpkg.cfg.d/docker-slim" <<'EOF'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/lintian/*
EOF
    debootstrap --variant=minbase "$SUITE" "$root" "$MIRROR" >"$WORK/debootstrap.log" 2>&1 \
        || { tail -20 "$WORK/debootstrap.log" >&2; echo "debootstrap failed" >&2; exit 1; }
    cat >"$root/etc/apt/sources.list" <<EOF
deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main
deb ${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security} $SUITE-security main
EOF
    # As the Docker images of Debian: apt keeps no package caches or downloaded packages (its two
    # cache files alone are about 80 MB).
    printf 'APT::Install-Recommends "false";\n' >"$root/etc/apt/apt.conf.d/docker-no-recommends"
    cat >"$root/etc/apt/apt.conf.d/docker-clean" <<'EOF'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
EOF
    rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/cache/apt/*.bin "$root"/var/lib/apt/lists/* "$root"/usr/share/doc/*/[!c]* \
        "$root"/usr/share/man/* "$root"/usr/share/locale/*
    tar -C "$root" -c . | docker import \
        --change 'CMD ["bash"]' \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change "LABEL inputs=\"$inputs\"" - "$BASE_IMAGE" >/dev/null
    rm -rf "$root"
}

# A Dockerfile on stdin, FROM the base image, with no build context.
build_on_base() {  # build_on_base IMAGE INPUTS (Dockerfile body on stdin)
    { echo "FROM $BASE_IMAGE"; cat; echo "LABEL inputs=\"$2\""; } | quiet_build -t "$1" -
}

# docker build, its output shown only when it fails (the CLI's notice that the classic builder is
# deprecated, on engines without buildx, is not a failure).
quiet_build() {
    local log
    log=$(mktemp)
    if ! DOCKER_BUILDKIT=0 docker build "$@" >"$log" 2>&1; then
        tail -30 "$log" >&2
        rm -f "$log"
        return 1
    fi
    rm -f "$log"
}

# image_on_base IMAGE WHAT: IMAGE from the base image and a Dockerfile body on stdin, unless current.
image_on_base() {
    local inputs body
    body=$(cat)
    # The Dockerfile body's digest too: an image made from an older body is not current.
    inputs="$BASE_IMAGE $(docker image inspect -f '{{.Id}}' "$BASE_IMAGE") $2 $(echo "$body" | sha256sum | cut -c1-16)"
    if current "$1" "$inputs"; then echo "==> $1 is current"; return; fi
    echo "==> $1: Debian's $2"
    echo "$body" | build_on_base "$1" "$inputs"
}

redis_image() {
    # uid and gid 999 as in redis:7, so that the secrets made for Redis read the same on either image.
    image_on_base "$REDIS_IMAGE" redis-server <<'EOF'
RUN groupadd --system --gid 999 redis && useradd --system --uid 999 --gid 999 --home-dir /data redis \
    && apt-get update && apt-get install -y --no-install-recommends redis-server redis-tools \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir /data && chown redis:redis /data
# As redis:7: /data a volume, so a node without one of its own writes there under a read-only root.
VOLUME /data
WORKDIR /data
USER redis
EXPOSE 6379
CMD ["redis-server"]
EOF
}

prometheus_image() {
    # As prom/prometheus: the binary is the entrypoint, data in /prometheus, run as nobody.
    image_on_base "$PROMETHEUS_IMAGE" prometheus <<'EOF'
RUN apt-get update && apt-get install -y --no-install-recommends prometheus \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir /prometheus && chown nobody:nogroup /prometheus
VOLUME /prometheus
WORKDIR /prometheus
USER nobody
EXPOSE 9090
ENTRYPOINT ["/usr/bin/prometheus"]
CMD ["--config.file=/etc/prometheus/prometheus.yml", "--storage.tsdb.path=/prometheus"]
EOF
}

# The Swift toolchain on PATH, less what a build never runs (the debugger, language servers, docs).
swift_image() {
    local toolchain swift_version mirrors mirror_digest inputs
    command -v swift >/dev/null 2>&1 || { echo "no swift on PATH: the offline Swift image copies the local toolchain" >&2; exit 1; }
    toolchain=$(dirname "$(dirname "$(dirname "$(readlink -f "$(command -v swift)")")")")
    swift_version=$(swift --version 2>/dev/null | head -1)
    # Where git reads github.com from: a local mirror (`url.<dir>.insteadOf`) is copied as it is.
    mirrors=$(git config --system --get-regexp '^url\..*\.insteadof$' 2>/dev/null || true)
    mirror_digest=$(for dir in $(echo "$mirrors" | awk '{print $1}' | sed 's/^url\.//; s/\.insteadof$//' | sort -u); do
        [ -d "$dir" ] && find "$dir" -maxdepth 3 \( -name packed-refs -o -name HEAD \) -exec cat {} +
    done | sha256sum | cut -c1-16)
    inputs="$BASE_IMAGE $(docker image inspect -f '{{.Id}}' "$BASE_IMAGE") $swift_version at $toolchain, mirror $mirror_digest"
    if current "$SWIFT_IMAGE" "$inputs"; then echo "==> $SWIFT_IMAGE is current"; return; fi
    echo "==> $SWIFT_IMAGE: $swift_version from $toolchain"
    # The packages swift:*-bookworm installs for building (Swift's own Dockerfile for Debian 12).
    build_on_base "$SWIFT_IMAGE-packages" "$inputs" <<'EOF'
RUN apt-get update && apt-get install -y --no-install-recommends \
        binutils ca-certificates git gnupg2 libc6-dev libcurl4-openssl-dev libedit2 libgcc-12-dev \
        libncurses-dev libpython3-dev libsqlite3-0 libstdc++-12-dev libxml2-dev libz3-dev pkg-config \
        tzdata unzip zip zlib1g-dev \
    && rm -rf /var/lib/apt/lists/*
EOF
    local container
    container=$(docker create "$SWIFT_IMAGE-packages" true)
    # `docker cp -` takes a tar stream: the toolchain at the same path as here.
    tar -C / -c \
        --exclude='usr/bin/lldb*' --exclude='usr/bin/sourcekit-lsp' --exclude='usr/bin/clangd' \
        --exclude='usr/bin/docc' --exclude='usr/bin/swift-format' --exclude='usr/bin/wasmkit' \
        --exclude='usr/lib/liblldb*' --exclude='usr/lib/libsourcekitd*' --exclude='usr/lib/libSwiftSourceKit*' \
        --exclude='usr/share/docc' \
        "${toolchain#/}" | docker cp - "$container:/"
    local git_lines=""
    if [ -n "$mirrors" ]; then
        for dir in $(echo "$mirrors" | awk '{print $1}' | sed 's/^url\.//; s/\.insteadof$//' | sort -u); do
            [ -d "$dir" ] || continue
            echo "    the Swift package mirror $dir"
            tar -C / -c "${dir#/}" | docker cp - "$container:/"
        done
        git_lines=$(echo "$mirrors" | awk '{print "git config --system --add " $1 " " $2}' | sed 's/\.insteadof /.insteadOf /')
    fi
    docker start -a "$container" >/dev/null
    docker commit \
        --change "ENV PATH=$toolchain/usr/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
        --change "LABEL inputs=\"$inputs\"" "$container" "$SWIFT_IMAGE" >/dev/null
    docker rm "$container" >/dev/null
    if [ -n "$git_lines" ]; then
        # git's insteadOf for the mirror, set in the image as on this machine.
        { echo "FROM $SWIFT_IMAGE"; echo "RUN $(echo "$git_lines" | paste -sd '&' | sed 's/&/ \&\& /g')"; } \
            | quiet_build -t "$SWIFT_IMAGE" -
    fi
    docker rmi "$SWIFT_IMAGE-packages" >/dev/null
}

write_env() {
    local file=.env
    touch "$file"
    local kept
    kept=$(grep -v -E '^(SWIFT_IMAGE|BASE_IMAGE|REDIS_IMAGE|PROMETHEUS_IMAGE)=' "$file" || true)
    {
        [ -n "$kept" ] && echo "$kept"
        echo "SWIFT_IMAGE=$SWIFT_IMAGE"
        echo "BASE_IMAGE=$BASE_IMAGE"
        echo "REDIS_IMAGE=$REDIS_IMAGE"
        echo "PROMETHEUS_IMAGE=$PROMETHEUS_IMAGE"
    } >"$file.new"
    mv "$file.new" "$file"
    echo "==> image names written to .env (compose reads them from there)"
}

base_image
redis_image
prometheus_image
[ "$SWIFT" = true ] && swift_image
[ "$WRITE_ENV" = true ] && write_env
if [ "$PROJECT" = true ]; then
    echo "==> attribution-pipeline:latest (docker build on $SWIFT_IMAGE and $BASE_IMAGE)"
    build_project_image
    report_image_sizes
fi
