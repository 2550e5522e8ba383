# syntax=docker/dockerfile:1
# Switchyard's image: the release binary built on Debian 12, shipped on Debian 12 slim.
#   docker build -t switchyard:latest .
# Besides `switchyard` on the PATH, the image carries /opt/switchyard/portable: the binary with
# every library it needs and glibc's loader, started by a small wrapper, so that an engine Pod
# whose image is another distribution (vLLM's) can run `switchyard drain-wait` in its preStop
# hook after an initContainer copies the folder into a shared volume
# (deploy/kubernetes/samples/heterogeneous).

FROM debian:12 AS build
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      build-essential cmake ninja-build ccache pkg-config ca-certificates python3 \
      libboost1.81-dev libsimdjson-dev libyaml-cpp-dev libhiredis-dev libspdlog-dev libfmt-dev \
      libcli11-dev libxxhash-dev libssl-dev libgtest-dev libgmock-dev libbenchmark-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt CMakePresets.json ./
COPY cmake cmake
COPY data data
COPY src src
COPY tests tests
COPY bench bench
RUN cmake --preset release -DCMAKE_CXX_COMPILER_LAUNCHER= \
 && cmake --build --preset release --target switchyard -j"$(nproc)" \
 && strip build/release/switchyard
RUN set -eux; \
    mkdir -p /out/portable/lib; \
    cp build/release/switchyard /out/switchyard; \
    cp build/release/switchyard /out/portable/switchyard.bin; \
    for lib in $(ldd build/release/switchyard | awk '$3 ~ /^\// {print $3}'); do \
      cp -L "$lib" /out/portable/lib/; \
    done; \
    cp -L "$(ldd build/release/switchyard | awk '/ld-linux/ {print $1}')" /out/portable/lib/ld.so; \
    printf '%s\n' '#!/bin/sh' \
      '# switchyard with its own libraries and loader (any glibc-based image can run it).' \
      'd=$(dirname "$0")' \
      'exec "$d/lib/ld.so" --library-path "$d/lib" "$d/switchyard.bin" "$@"' \
      > /out/portable/switchyard; \
    chmod 0755 /out/portable/switchyard

FROM debian:12-slim
ARG DEBIAN_FRONTEND=noninteractive
RUN apt-get update \
 && apt-get install -y --no-install-recommends \
      ca-certificates libsimdjson14 libyaml-cpp0.7 libspdlog1.10 libfmt9 libssl3 \
      libhiredis0.14 \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 65532 switchyard \
 && useradd --uid 65532 --gid 65532 --no-create-home --shell /usr/sbin/nologin switchyard
COPY --from=build /out/switchyard /usr/local/bin/switchyard
COPY --from=build /out/portable /opt/switchyard/portable
USER 65532:65532
EXPOSE 8888 8889
ENTRYPOINT ["/usr/local/bin/switchyard"]
CMD ["gateway", "--config", "/etc/switchyard/gateway.yaml"]
