# syntax=docker/dockerfile:1
# The wasmpy service image: docker build -t wasmpy . (see README, "Running
# more than one replica").
#
# Stage 1 builds bin/wasmpy and our CPython for WASI from Debian's sources
# exactly as `make` does (assets/build/build.sh apt-gets its toolchain and
# the pinned source packages; the build runs as root here), then warms the
# interpreter cache: the compiled interpreter and its snapshot image.
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ENV XDG_CACHE_HOME=/cache
RUN make all \
 && bin/wasmpy exec -c 'import json, re, collections; print("cache warm")' \
 && rm -rf /cache/wasmpy/build /cache/wasmpy/debs \
 && chmod -R a+rX,a-w /cache/wasmpy

# Stage 2 runs it as an unprivileged user on slim Debian, with the cache
# baked in read-only. The compiled code in it is keyed by the build
# machine's CPU features; the Kubernetes Deployment copies it to a writable
# emptyDir at start, so a node with other CPU features recompiles once
# instead of failing.
FROM debian:bookworm-slim
RUN useradd --system --uid 10001 --no-create-home --home-dir /nonexistent --shell /usr/sbin/nologin wasmpy
COPY --from=build /src/bin/wasmpy /usr/local/bin/wasmpy
COPY --from=build /cache/wasmpy /opt/wasmpy/cache
ENV WASMPY_CACHE_DIR=/opt/wasmpy/cache
USER 10001:10001
EXPOSE 8002
# The store: set WASMPY_DB to a postgres:// URL (replicas) or a file on a
# volume (one replica). Tokens: WASMPY_TOKENS or --tokens-file.
ENTRYPOINT ["wasmpy"]
CMD ["serve", "--addr", "0.0.0.0:8002", "--drain-delay", "5s"]
