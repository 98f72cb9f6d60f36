#!/usr/bin/env bash
# Builds the control plane (kube-apiserver, kube-controller-manager, kube-scheduler, etcd) and
# kwok from their Go modules into a cache directory keyed by version; skips what is built.
# Prints the directory holding the binaries as its last line.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/go-build-progress.sh"
k8s_version=$(cat "$here/k8s/VERSION")
kwok_version=$(cat "$here/kwok/VERSION")
cache=${WINFLEET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/winfleet}
# The key changes when go.mod/go.sum change, so a new pin never reuses old binaries.
key=$(cat "$here/k8s/go.sum" "$here/kwok/go.sum" | sha256sum | cut -c1-12)
out="$cache/bin/k8s-$k8s_version-kwok-$kwok_version-$key"
mkdir -p "$out"
cache_lock "$out"
export CGO_ENABLED=0 GOFLAGS=-trimpath

minor=${k8s_version#v1.}; minor=${minor%%.*}
build_date=$(date -u +%Y-%m-%dT%H:%M:%SZ)
ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$build_date"
done

steps=(kube-apiserver kube-controller-manager kube-scheduler etcd kwok)
n=${#steps[@]}
i=0
for name in "${steps[@]}"; do
  i=$((i + 1))
  if [ -x "$out/$name" ]; then
    echo "[$i/$n] $name: cached" >&2
    continue
  fi
  case $name in
    etcd) dir=$here/k8s; pkg=./cmd/etcd; flags="-s -w" ;;
    kwok) dir=$here/kwok; pkg=sigs.k8s.io/kwok/cmd/kwok; flags="-s -w" ;;
    *) dir=$here/k8s; pkg=k8s.io/kubernetes/cmd/$name; flags="-s -w $ldflags" ;;
  esac
  echo "[$i/$n] $name: building (a cold first build compiles hundreds of packages)" >&2
  start=$SECONDS
  (cd "$dir" && go build -v -ldflags "$flags" -o "$out/$name.tmp" "$pkg" 2>&1) | go_build_progress "$start"
  if [ ! -f "$out/$name.tmp" ]; then echo "[$i/$n] $name: build failed" >&2; exit 1; fi
  mv "$out/$name.tmp" "$out/$name"
  echo "[$i/$n] $name: built in $((SECONDS - start))s ($(du -h "$out/$name" | cut -f1))" >&2
done
echo "$out"
