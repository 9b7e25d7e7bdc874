# Entry points for users and CI. `make test` is everything CI checks.
SHELL := /usr/bin/env bash
CARGO ?= cargo
HELM ?= $(shell .ci/install-helm 2>/dev/null || echo helm)
CONTROLLERS := workshop-scaler service-scaler scaledown-window stackable-scaler
CHARTS := $(wildcard charts/*/Chart.yaml)

.PHONY: build test fmt fmt-check clippy unit crds crds-check charts-check demo bench clean

build:
	$(CARGO) build --workspace --all-targets

## test: fmt check, clippy -D warnings, all tests, CRDs up to date, chart lint/template.
test: fmt-check clippy unit crds-check charts-check

fmt:
	$(CARGO) fmt --all

fmt-check:
	$(CARGO) fmt --all -- --check

clippy:
	$(CARGO) clippy --workspace --all-targets --all-features -- -D warnings

unit:
	$(CARGO) test --workspace --all-features

## crds: regenerate crds/*.yaml (and the charts' copies) from the Rust types.
crds:
	$(CARGO) run --quiet -p ebb-crds --bin crdgen -- crds

crds-check:
	$(CARGO) run --quiet -p ebb-crds --bin crdgen -- --check crds

## charts-check: helm lint + template every chart in every flag combination, RBAC agreement.
charts-check:
	@if [ -n "$(CHARTS)" ]; then HELM="$(HELM)" .ci/check-charts; else echo "no charts yet"; fi

## demo: the controllers' decisions, offline, on the example manifests (no cluster needed).
demo:
	@.ci/demo

## bench: benchmarks that print figures (not timed tests).
bench:
	$(CARGO) bench --workspace

clean:
	$(CARGO) clean
