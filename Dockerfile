# Multi-stage: build every executable with Swift, ship them on slim Debian with the shared libraries
# they load at run time (hiredis 0.14 is not linked statically by Debian's package; jemalloc is their
# allocator, see Shared/ServiceRuntime/Operations/Allocator.swift).
#
# The base images are build arguments whose defaults are the public images. On a machine that reaches
# no image registry, scripts/compose-images.sh builds stand-ins from Debian's packages and the local
# Swift toolchain and passes their names (SWIFT_IMAGE, BASE_IMAGE), through .env when compose builds.
ARG SWIFT_IMAGE=swift:6.2-bookworm
ARG BASE_IMAGE=debian:bookworm-slim

# The runtime stage comes first: `docker build --target runtime` then builds nothing else, even with the
# classic builder (which builds every stage up to its target).
FROM ${BASE_IMAGE} AS runtime
# VERSION is PipelineVersion.current (ComposeFileTests holds them equal); REVISION the commit built.
ARG VERSION=0.2.0
ARG REVISION=unknown
# Every service's build_info metric carries the revision.
ENV PIPELINE_REVISION=${REVISION}
LABEL org.opencontainers.image.title="attribution-pipeline" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.description="Self-hosted ad attribution with AdAttributionKit semantics: ingest, admin, verifier, attribution-winner, scheduler, dispatcher and the attribution tool" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}"
# One system user per service, so that each reads only its own secrets (compose's init service gives
# each file to the one user that needs it): uids and gids 10001-10008 (admin last, so that the others
# keep theirs). `pipeline` (10000), the default, reads none.
RUN apt-get update && apt-get install -y --no-install-recommends libhiredis0.14 libssl3 libjemalloc2 ca-certificates curl openssl publicsuffix \
    && rm -rf /var/lib/apt/lists/* \
    && uid=10000 \
    && for user in pipeline ingest verifier attribution-winner scheduler dispatcher receiver pipeline-operator admin; do \
         groupadd --system --gid "$uid" "$user" \
         && useradd --system --uid "$uid" --gid "$uid" --no-create-home --shell /usr/sbin/nologin "$user" \
         || exit 1; \
         uid=$((uid + 1)); \
       done \
    && echo /usr/local/lib/swift >/etc/ld.so.conf.d/swift.conf
COPY ops/compose/*.sh /usr/local/libexec/attribution-pipeline/
EXPOSE 8080 8081 9090
CMD ["ingest"]

FROM ${SWIFT_IMAGE} AS build
RUN apt-get update && apt-get install -y --no-install-recommends libhiredis-dev libssl-dev libjemalloc-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Package sources come from where git reads github.com in the build image: GitHub for the public image,
# the host's package mirror for the offline one (scripts/compose-images.sh copies it with its insteadOf).
COPY Package.swift ./
RUN swift package resolve
COPY Shared Shared
COPY Services Services
COPY Tools Tools
COPY Tests Tests
# The Swift runtime linked dynamically and shipped once (Foundation's ICU data alone is about 30 MB,
# which a static link would copy into each of the six executables), symbols stripped.
RUN swift build -c release \
    && mkdir -p /out/bin /out/lib \
    && for product in ingest admin verifier attribution-winner scheduler dispatcher attribution; do \
         cp "$(swift build -c release --show-bin-path)/$product" /out/bin/; \
       done \
    && strip /out/bin/* \
    && ldd /out/bin/* | awk '$3 ~ /\/swift\/linux\// { print $3 }' | sort -u | xargs -I{} cp {} /out/lib/ \
    && strip --strip-unneeded /out/lib/*

# The image: the runtime stage and the executables. scripts/compose-test.sh --binaries builds this same
# stage on executables built outside Docker (CI's, already built and tested), to spare a second compile.
FROM runtime
COPY --from=build /out/lib/ /usr/local/lib/swift/
RUN ldconfig
COPY --from=build /out/bin/ /usr/local/bin/
USER pipeline
