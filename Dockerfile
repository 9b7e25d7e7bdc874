# syntax=docker/dockerfile:1
# One small static image per controller; the build arg picks the binary:
#   docker build --build-arg CONTROLLER=service-scaler -t ghcr.io/ebb-dev/service-scaler:dev .
# CONTROLLER: workshop-scaler | service-scaler | scaledown-window | stackable-scaler
# The image's entrypoint is the binary: `docker run IMAGE plan --file ...` works too.

ARG RUST_VERSION=1.95

# Build: musl targets link statically by default, so the binary needs no libc at run time.
FROM rust:${RUST_VERSION}-alpine AS build
ARG CONTROLLER
RUN test -n "$CONTROLLER" || { echo "set --build-arg CONTROLLER=<controller>" >&2; exit 1; }
# ring (TLS) compiles C: the image has gcc; musl-dev adds the libc headers.
RUN apk add --no-cache musl-dev
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

# Run: no shell, no package manager; CA certificates and a passwd entry for 65532 only.
FROM gcr.io/distroless/static-debian12:nonroot
ARG CONTROLLER
LABEL org.opencontainers.image.title="ebb ${CONTROLLER}" \
      org.opencontainers.image.source="https://github.com/ebb-dev/ebb" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=build /out/controller /usr/local/bin/controller
# Numeric, so Kubernetes can verify runAsNonRoot.
USER 65532:65532
EXPOSE 8080 8443
ENTRYPOINT ["/usr/local/bin/controller"]
