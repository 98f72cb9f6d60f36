# The two commands: `make lab` and `make test`. Each does its own setup and is fast when
# everything is already in place.
SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

STAMP := node_modules/.winfleet-installed

.PHONY: help lab test check deps packages binaries clean-binaries agent payload

help:
	@echo "make lab    start a local cluster with simulated Windows hosts (Ctrl-C stops it)"
	@echo "make test   lint, typecheck and run every test against a real control plane"
	@echo "make agent  build the Windows agent executable (.cache/agent/winfleet-agent.exe)"
	@echo "make payload build the Windows node binaries and payload.json (slow when cold)"

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

check: deps
	@echo "==> lint"
	@npm run --silent lint
	@echo "==> typecheck"
	@npm run --silent typecheck

test: check binaries
	@echo "==> tests"
	@WINFLEET_BIN_DIR="$$(bash hack/build-binaries.sh 2>/dev/null)" npm test --silent

lab: deps binaries
	@WINFLEET_BIN_DIR="$$(bash hack/build-binaries.sh 2>/dev/null)" npm run --silent lab

# The Windows agent executable (a Node single executable application); rebuilt only when the
# bundle or the Node version changes (see scripts/build-agent.ts).
agent: deps
	@npm run --silent build:agent

# The Windows node payload (kubelet, kube-proxy, containerd, CNI plugins, csi-proxy,
# windows_exporter) and its payload.json, built from Go modules into a cache directory keyed
# by version (see hack/build-payload.sh); prints that directory.
payload: deps
	@bash hack/build-payload.sh
