# The two commands: `make lab` and `make test`. Each does its own setup and is fast when
# everything is already in place.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

STAMP := node_modules/.winfleet-installed

.PHONY: help lab lab-soak test check deps packages binaries tools netlab flag-lists clean-binaries agent payload image chart krew

help:
	@echo "make lab    start a local cluster with simulated Windows hosts (Ctrl-C stops it)"
	@echo "make test   lint, typecheck and run every test against a real control plane"
	@echo "make agent  build the Windows agent and its service shim (.cache/agent/*.exe)"
	@echo "make payload build the Windows node binaries and payload.json (slow when cold)"
	@echo "make image  build the operator image, no Docker needed (IMAGE=host/repo:tag also pushes)"
	@echo "make chart  lint the Helm chart (strict) and package it into .cache/chart"
	@echo "make krew   build the winfleet CLI (kubectl-winfleet, Linux amd64), its krew archive and manifest"

# Debian packages the tests and the lab use (installed only when missing).
packages:
	@bash hack/ensure-packages.sh

$(STAMP): package.json package-lock.json
	@echo "==> npm ci"
	@npm ci --no-audit --no-fund --loglevel=error
	@touch $@

deps: packages $(STAMP)

# Control plane and kwok from Go modules, cached by version (see hack/build-binaries.sh).
binaries:
	@bash hack/build-binaries.sh >/dev/null

# Go tools the chart and image steps use (helm, crane), pinned in hack/tools/go.mod and built
# from the Go module proxy into a cache (see hack/build-tools.sh); built here, with progress,
# so that no test has to build them silently.
tools:
	@bash hack/build-tools.sh >/dev/null

# The real Linux networking components the network tests run (flanneld, and the bridge,
# host-local and loopback CNI plugins), built from the Go module proxy into a cache (see
# hack/build-netlab.sh); built here, with progress, so that no test has to build them silently.
netlab:
	@bash hack/build-netlab.sh >/dev/null

# The flags (and windows_exporter collectors) the pinned kubelet, kube-proxy and
# windows_exporter accept, generated from their Go modules into a cache (see
# hack/build-flag-lists.sh): the simulated hosts refuse a command line the real programs would.
flag-lists: deps
	@bash hack/build-flag-lists.sh >/dev/null

check: deps
	@echo "==> lint"
	@npm run --silent lint
	@echo "==> typecheck"
	@npm run --silent typecheck

test: check binaries tools netlab flag-lists
	@echo "==> tests"
	@WINFLEET_BIN_DIR="$$(bash hack/build-binaries.sh 2>/dev/null)" \
	  WINFLEET_NETLAB_BIN="$$(bash hack/build-netlab.sh 2>/dev/null)" \
	  WINFLEET_FLAG_LISTS="$$(bash hack/build-flag-lists.sh 2>/dev/null)" npm test --silent

# As root the lab also shows a Windows pod's packets reaching a Linux pod through the real Linux
# flanneld, so it builds the netlab binaries (cached; with progress) unless WINFLEET_NETLAB_BIN
# names them; unprivileged it runs without them and says so. WINFLEET_LAB_NETWORK=routed runs
# the old routed pod network instead of flannel-vxlan (sim/lab/lab-network.ts).
lab: deps binaries tools flag-lists
	@if [ "$$(id -u)" = 0 ] && [ -z "$${WINFLEET_NETLAB_BIN:-}" ] && [ "$${WINFLEET_LAB_NETWORK:-flannel-vxlan}" = flannel-vxlan ]; then \
	  export WINFLEET_NETLAB_BIN="$$(bash hack/build-netlab.sh | tail -1)"; fi; \
	WINFLEET_BIN_DIR="$$(bash hack/build-binaries.sh 2>/dev/null)" \
	  WINFLEET_FLAG_LISTS="$$(bash hack/build-flag-lists.sh 2>/dev/null)" npm run --silent lab

# The lab for WINFLEET_SOAK_MINUTES (default 10), then a report of any Windows Node that showed
# KubeProxyUnhealthy or ended without KubeletCertificateExpiring=False (sim/lab/soak.ts); exit 1
# if any did.
lab-soak: deps binaries tools flag-lists
	@WINFLEET_BIN_DIR="$$(bash hack/build-binaries.sh 2>/dev/null)" \
	  WINFLEET_FLAG_LISTS="$$(bash hack/build-flag-lists.sh 2>/dev/null)" npm run --silent lab:soak

# The Windows agent executable (a Node single executable application); rebuilt only when the
# bundle or the Node version changes (see scripts/build-agent.ts). Beside it winfleet-service.exe,
# the Go shim that runs it as a Windows service (windows/service, scripts/build-service-shim.ts).
agent: deps
	@npm run --silent build:agent
	@node_modules/.bin/node scripts/build-service-shim.ts

# The Windows node payload (kubelet, kube-proxy, containerd, CNI plugins, flanneld, csi-proxy,
# windows_exporter, the agent and its service shim) and its payload.json, built from Go modules
# into a cache directory keyed by version, its binaries run under Wine (see
# hack/build-payload.sh); prints that directory.
payload: deps
	@bash hack/build-payload.sh

# The operator's container image, built without a container engine and reproducibly (see
# scripts/build-image.ts): an OCI layout in .cache/image/oci, and a push when IMAGE is given,
# e.g. `make image IMAGE=127.0.0.1:5000/winfleet/operator:dev`. Prints the digest.
image: deps
	@node_modules/.bin/node scripts/build-image.ts $(if $(IMAGE),--image '$(IMAGE)') $(if $(IMAGE_SOURCE),--source '$(IMAGE_SOURCE)')

# The Helm chart charts/winfleet: `helm lint --strict`, then `helm package` into .cache/chart
# (helm v4 built from the Go module proxy by hack/build-tools.sh). The chart's tests run in
# `make test`.
chart: deps
	@helm="$$(bash hack/build-tools.sh helm)/helm"; \
	"$$helm" lint --strict charts/winfleet; \
	"$$helm" package charts/winfleet --destination .cache/chart

# The winfleet CLI as one Linux executable, its krew archive and the filled-in krew manifest
# (scripts/build-cli.ts); KREW_OUT picks the directory (default .cache/cli), KREW_BASE_URL
# where the archive will be downloaded from.
KREW_OUT ?= .cache/cli
krew: deps
	@node_modules/.bin/node scripts/build-cli.ts $(KREW_OUT)
