#!/usr/bin/env bash
# Builds the real Linux networking components of the network test world (sim/netlab) from Go
# modules into a cache directory keyed by go.mod/go.sum; skips what is built. Prints that
# directory as its last line.
#   flanneld               github.com/flannel-io/flannel (hack/netlab/flannel)
#   bridge, host-local,    github.com/containernetworking/plugins (hack/netlab/cni), the version
#   loopback               the Windows payload pins (hack/payload/cni)
#   coredns                github.com/coredns/coredns (hack/netlab/coredns): its main.go there
#                          imports coremain and only the kubernetes, errors, log, health and
#                          ready plugins, so none of the stock build's cloud backends is built
#
# flanneld: the module proxy refuses github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/vpc,
# which flannel's tencentvpc backend imports, and the udp backend needs cgo. So upstream's
# main.go is copied from the module cache into a temporary directory without those two backend
# imports (hack/lib/flanneld-main.sh, which hack/build-payload.sh uses for flanneld.exe too)
# and built there with CGO_ENABLED=0 against hack/netlab/flannel's go.mod; nothing of
# upstream's is kept in this repository. The vxlan and host-gw backends are unchanged.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/go-build-progress.sh"
. "$here/lib/flanneld-main.sh"
n=$here/netlab
cache=${WINFLEET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/winfleet}
key=$(cat "$n"/*/go.mod "$n"/*/go.sum "$n"/coredns/main.go "$here/build-netlab.sh" "$here/lib/flanneld-main.sh" | sha256sum | cut -c1-12)
flannel_version=$(cd "$n/flannel" && go list -m -f '{{.Version}}' github.com/flannel-io/flannel)
plugins_version=$(cd "$n/cni" && go list -m -f '{{.Version}}' github.com/containernetworking/plugins)
coredns_version=$(cd "$n/coredns" && go list -m -f '{{.Version}}' github.com/coredns/coredns)
out="$cache/netlab/flannel-$flannel_version-plugins-$plugins_version-coredns-$coredns_version-$key"
mkdir -p "$out"
cache_lock "$out"
export CGO_ENABLED=0 GOOS=linux GOFLAGS="-trimpath -buildvcs=false"

steps=(flanneld bridge host-local loopback coredns)
total=${#steps[@]}
i=0
for name in "${steps[@]}"; do
  i=$((i + 1))
  if [ -x "$out/$name" ]; then
    echo "[$i/$total] $name: cached" >&2
    continue
  fi
  tmp=""
  case $name in
    flanneld)
      version=$flannel_version
      tmp=$(mktemp -d "${TMPDIR:-/tmp}/winfleet-flanneld-build.XXXXXX")
      trap 'rm -rf "$tmp"' EXIT
      cp "$n/flannel/go.mod" "$n/flannel/go.sum" "$tmp/"
      mkdir "$tmp/flanneld"
      flanneld_main "$n/flannel" "$tmp/flanneld"
      dir=$tmp; pkg=./flanneld
      flags="-s -w -X github.com/flannel-io/flannel/pkg/version.Version=$version" ;;
    coredns)
      version=$coredns_version
      dir=$n/coredns; pkg=.
      flags="-s -w -X github.com/coredns/coredns/coremain.gitTag=$version" ;;
    *)
      version=$plugins_version
      case $name in
        host-local) pkg=github.com/containernetworking/plugins/plugins/ipam/host-local ;;
        *) pkg=github.com/containernetworking/plugins/plugins/main/$name ;;
      esac
      dir=$n/cni
      flags="-s -w -X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$version" ;;
  esac
  echo "[$i/$total] $name: building $version from the Go module proxy" >&2
  start=$SECONDS
  rm -f "$out/$name.tmp"
  (cd "$dir" && go build -v -ldflags "$flags" -o "$out/$name.tmp" "$pkg" 2>&1) | go_build_progress "$start"
  if [ -n "$tmp" ]; then rm -rf "$tmp"; trap - EXIT; fi
  if [ ! -f "$out/$name.tmp" ]; then echo "[$i/$total] $name: build failed" >&2; exit 1; fi
  mv "$out/$name.tmp" "$out/$name"
  echo "[$i/$total] $name: built in $((SECONDS - start))s ($(du -h "$out/$name" | cut -f1))" >&2
done
echo "$out"
