# syntax=docker/dockerfile:1
# One small image per controller; the build arg picks the binary:
#   docker build --build-arg CONTROLLER=service-scaler -t ghcr.io/ebb-dev/service-scaler:dev .
# CONTROLLER: workshop-scaler | service-scaler | scaledown-window | stackable-scaler
# The image's entrypoint is the binary: `docker run IMAGE plan --file ...` works too.
# .ci/images builds the same image without Docker (from .ci/image-rootfs and this file's USER,
# EXPOSE, LABEL and ENTRYPOINT); .ci/image-check fails when the two drift.

ARG RUST_VERSION=1.95

# Build: Debian 12 (glibc), as the machines that run .ci/images. The binary links glibc
# dynamically; .ci/image-rootfs copies the libraries it needs from this stage.
FROM rust:${RUST_VERSION}-bookworm AS build
ARG CONTROLLER
RUN test -n "$CONTROLLER" || { echo "set --build-arg CONTROLLER=<controller>" >&2; exit 1; }
# The image's CA certificates and zoneinfo come from Debian's packages.
RUN dpkg -s ca-certificates tzdata >/dev/null 2>&1 \
 || { apt-get update && apt-get install -y --no-install-recommends ca-certificates tzdata \
      && rm -rf /var/lib/apt/lists/*; }
WORKDIR /src
COPY . .
# A multi-platform build (linux/amd64 + linux/arm64, emulated) runs this stage once per platform
# in one BuildKit, and a cache mount's default id is its target path: without a per-platform id
# both would build into, and copy out of, the same target/. The registry cache is arch-neutral.
ARG TARGETPLATFORM
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target,id=ebb-target-${TARGETPLATFORM} \
    cargo build --release --locked -p "$CONTROLLER" --bin "$CONTROLLER" \
 && mkdir -p /out && cp "target/release/$CONTROLLER" /out/controller
# The image's whole file system: the binary, its glibc libraries, CA certificates, zoneinfo,
# passwd/group (root, nonroot 65532) and /tmp. No shell, no package manager.
RUN .ci/image-rootfs /out/controller /rootfs

FROM scratch
ARG CONTROLLER
LABEL org.opencontainers.image.title="ebb ${CONTROLLER}" \
      org.opencontainers.image.source="https://github.com/ebb-dev/ebb" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /rootfs /
# glibc's malloc with one arena for every thread: a burst's buffers freed on one worker are
# reused by the next, where per-thread arenas each kept their own peak. Its thresholds stay
# glibc's own (fixed ones gave back memory after every burst and cost a mass change 5 times the
# CPU). docs/decisions.md, "Memory per object", has the figures.
ENV GLIBC_TUNABLES=glibc.malloc.arena_max=1
# Numeric, so Kubernetes can verify runAsNonRoot.
USER 65532:65532
EXPOSE 8080 8443
ENTRYPOINT ["/usr/local/bin/controller"]
