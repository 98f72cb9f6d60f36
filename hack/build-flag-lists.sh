#!/usr/bin/env bash
# Generates the flag lists the simulated hosts check command lines against: every flag the
# pinned kubelet and kube-proxy (hack/payload/k8s, which pins what the control plane pins)
# and windows_exporter (hack/payload/windows-exporter) accept, and the exporter's collectors.
# The generators (hack/payload/*/cmd/*-flags) import the real commands' packages; they are
# built with GOOS=windows, since Windows-only flags (--windows-service,
# --windows-priorityclass) and the exporter's collectors exist only there, and run under Wine
# (scripts/flag-lists.ts). The result goes to a cache directory keyed by the pins and the
# generators' sources; prints the path of flag-lists.json as its last line.
#
# Why build rather than parse the sources: the kubelet's and kube-proxy's flags are registered
# by code spread over dozens of packages (component-base logging, feature gates, Go's global
# flag set, per-OS files), which only running that code lists exactly. A cold build compiles
# the kubelet's packages for Windows (a few minutes; the payload build then reuses Go's cache).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
. "$here/lib/go-build-progress.sh"
p=$here/payload
k8s_version=$(cat "$here/k8s/VERSION")
exporter_version=$(cat "$p/windows-exporter/VERSION")

cache=${WINFLEET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/winfleet}
key=$(cat "$p/k8s/go.mod" "$p/k8s/go.sum" "$p/windows-exporter/go.mod" "$p/windows-exporter/go.sum" \
  "$p/k8s/flaglist/"*.go "$p/k8s/cmd/kubelet-flags/"*.go "$p/k8s/cmd/kube-proxy-flags/"*.go \
  "$p/windows-exporter/cmd/exporter-flags/"*.go "$repo/scripts/flag-lists.ts" | sha256sum | cut -c1-12)
out="$cache/flag-lists/$k8s_version-$exporter_version-$key"
if [ -f "$out/flag-lists.json" ]; then
  echo "flag lists: cached" >&2
  echo "$out/flag-lists.json"
  exit 0
fi
mkdir -p "$out"
cache_lock "$out"
# Another build may have finished while this one waited.
if [ -f "$out/flag-lists.json" ]; then
  echo "flag lists: cached" >&2
  echo "$out/flag-lists.json"
  exit 0
fi
export CGO_ENABLED=0 GOOS=windows GOARCH=amd64 GOFLAGS="-trimpath -buildvcs=false"

k8s_ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$k8s_version"
exporter_ldflags="-s -w -X github.com/prometheus/common/version.Version=${exporter_version#v}"
steps=(kubelet-flags kube-proxy-flags exporter-flags)
n=$((${#steps[@]} + 1))
i=0
for name in "${steps[@]}"; do
  i=$((i + 1))
  case $name in
    exporter-flags) dir=$p/windows-exporter; flags=$exporter_ldflags ;;
    *) dir=$p/k8s; flags=$k8s_ldflags ;;
  esac
  echo "[$i/$n] flag lists: building $name.exe (Windows; a cold first build compiles hundreds of packages)" >&2
  start=$SECONDS
  rm -f "$out/$name.exe"
  (cd "$dir" && go build -v -ldflags "$flags" -o "$out/$name.exe" "./cmd/$name" 2>&1) | go_build_progress "$start"
  if [ ! -f "$out/$name.exe" ]; then
    echo "flag lists: building $name.exe failed (see above); the simulated hosts cannot check flags without it" >&2
    exit 1
  fi
  echo "[$i/$n] flag lists: built $name.exe in $((SECONDS - start))s" >&2
done

i=$((i + 1))
echo "[$i/$n] flag lists: running the generators under Wine" >&2
exporter_dir=$(cd "$p/windows-exporter" && go mod download github.com/prometheus-community/windows_exporter &&
  go list -m -f '{{.Dir}}' github.com/prometheus-community/windows_exporter)
(cd "$repo" && node_modules/.bin/node scripts/flag-lists.ts "$out/flag-lists.json" "$exporter_dir" \
  "$out/kubelet-flags.exe" "$out/kube-proxy-flags.exe" "$out/exporter-flags.exe")
rm -f "$out"/*.exe
echo "[$i/$n] flag lists: written to $out/flag-lists.json" >&2
echo "$out/flag-lists.json"
