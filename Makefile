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
	.ci/chart-crds sync

## crds-check: crds/ matches the Rust types, and every chart's copy (files/crds/) matches crds/.
crds-check:
	$(CARGO) run --quiet -p ebb-crds --bin crdgen -- --check crds
	.ci/chart-crds check

## charts-check: helm lint + template every chart in every flag combination, RBAC agreement;
## then the end-to-end suite, which skips itself unless EBB_E2E=1 (it needs a cluster).
charts-check:
	$(CARGO) build --quiet --workspace --bins  # the check compares chart flags with each binary's --help
	@if [ -n "$(CHARTS)" ]; then HELM="$(HELM)" .ci/check-charts; else echo "no charts yet"; fi
	@HELM="$(HELM)" e2e/run.sh

## demo: the controllers' decisions, offline, on the example manifests (no cluster needed).
demo:
	@.ci/demo

## bench: benchmarks that print figures (not timed tests).
bench:
	$(CARGO) bench -p ebb-schedule --bench transitions

clean:
	$(CARGO) clean
