#!/usr/bin/env bash
# Installs the Debian packages winfleet's tests and lab need, only when a command is missing.
set -euo pipefail
declare -A need=(
  [go]=golang-go         # builds the control plane; the machine's Go 1.26 is preferred
  [setpriv]=util-linux   # ties component lifetimes to the launcher
  [curl]=curl
  [docker-registry]=docker-registry  # the OCI registry image lookups are tested against
)
missing=()
for cmd in "${!need[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("${need[$cmd]}")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "==> apt-get install ${missing[*]}" >&2
# As root, run apt-get directly; otherwise through sudo. `env` carries the frontend setting
# through sudo and keeps the assignment from being taken for the command when sudo is empty.
sudo=()
[ "$(id -u)" -ne 0 ] && sudo=(sudo)
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" >/dev/null
echo "==> installed ${missing[*]}" >&2
