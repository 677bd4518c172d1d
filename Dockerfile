# Multi-stage: build every executable with Swift, ship them on slim Debian with the shared libraries
# they load at run time (hiredis 0.14 is not linked statically by Debian's package; jemalloc is their
# allocator, see Shared/ServiceRuntime/Operations/Allocator.swift).
FROM swift:6.2-bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends libhiredis-dev libssl-dev libjemalloc-dev \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
RUN swift package resolve
COPY Shared Shared
COPY Services Services
COPY Tools Tools
COPY Tests Tests
RUN swift build -c release --static-swift-stdlib \
    && mkdir /out \
    && for product in ingest verifier attribution-winner scheduler dispatcher attribution; do \
         cp "$(swift build -c release --show-bin-path)/$product" /out/; \
       done

FROM debian:bookworm-slim
RUN apt-get update && apt-get install -y --no-install-recommends libhiredis0.14 libssl3 libjemalloc2 ca-certificates curl publicsuffix \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 pipeline
COPY --from=build /out/ /usr/local/bin/
USER pipeline
EXPOSE 8080 9090
CMD ["ingest"]
