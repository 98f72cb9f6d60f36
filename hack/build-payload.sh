#!/usr/bin/env bash
# Builds the Windows node payload (GOOS=windows GOARCH=amd64) from Go modules, one module per
# upstream project under hack/payload/, into a cache directory keyed by version; skips what is
# built. Then runs the binaries under Wine, each saying the version it is listed with
# (scripts/payload-wine-check.ts; skipped without wine64), writes payload.json (name, version,
# sha256, source path of every file) beside the binaries and prints that directory as its last
# line.
# hack/payload/VERSION is the payload revision n in "<kubernetes version>-wf.<n>": bump it when
# a pin or a build flag changes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/go-build-progress.sh"
. "$here/lib/flanneld-main.sh"
p=$here/payload
k8s_version=$(cat "$here/k8s/VERSION")
payload_version=$k8s_version-wf.$(cat "$p/VERSION")

# kubelet and kube-proxy need modules the control plane does not (hnslib, cri-streaming…), so
# they build from hack/payload/k8s, which must pin what hack/k8s pins.
if ! grep -qE "^(require |	)k8s\.io/kubernetes $k8s_version\$" "$p/k8s/go.mod" ||
  ! diff <(grep ' => ' "$here/k8s/go.mod") <(grep ' => ' "$p/k8s/go.mod") >/dev/null; then
  echo "hack/payload/k8s/go.mod does not pin what hack/k8s/go.mod pins; regenerate it with:" >&2
  echo "  cd hack/payload/k8s && { head -1 go.mod; sed '1d; s|^module .*|module winfleet.local/hack/payload/k8s|' ../../k8s/go.mod; } >go.mod.new && mv go.mod.new go.mod && GONOSUMDB=k8s.io/kubernetes go mod tidy" >&2
  echo "and bump hack/payload/VERSION" >&2
  exit 1
fi

# flanneld.exe is the flanneld the network test world runs on Linux (hack/build-netlab.sh), so
# hack/payload/flannel pins what hack/netlab/flannel pins.
if ! diff <(sed '1,/^module /d' "$here/netlab/flannel/go.mod") <(sed '1,/^module /d' "$p/flannel/go.mod") >/dev/null ||
  ! cmp -s "$here/netlab/flannel/go.sum" "$p/flannel/go.sum" ||
  [ "$(cat "$p/flannel/VERSION")" != "$(cd "$p/flannel" && go list -m -f '{{.Version}}' github.com/flannel-io/flannel)" ]; then
  echo "hack/payload/flannel does not pin what hack/netlab/flannel pins, or its VERSION is not its flannel's; copy" >&2
  echo "  hack/netlab/flannel's go.mod (below its module line), go.sum and tools.go imports there, set VERSION" >&2
  echo "and bump hack/payload/VERSION" >&2
  exit 1
fi

cache=${WINFLEET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/winfleet}
# The key changes when any pin or godebug/replace line changes, so a new pin never reuses old
# binaries.
key=$(cat "$p/VERSION" "$p"/*/go.mod "$p"/*/go.sum | sha256sum | cut -c1-12)
out="$cache/payload/$payload_version-$key"
mkdir -p "$out"
cache_lock "$out"
export CGO_ENABLED=0 GOOS=windows GOARCH=amd64 GOFLAGS="-trimpath -buildvcs=false"

# Build dates are the modules' publication times, so a rebuild gives the same bytes.
module_time() { (cd "$p/$1" && go list -m -f "{{.Time.UTC.Format \"$3\"}}" "$2"); }
minor=${k8s_version#v1.}; minor=${minor%%.*}
build_date=$(module_time k8s k8s.io/kubernetes 2006-01-02T15:04:05Z)
k8s_ldflags=""
for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
  k8s_ldflags+=" -X $pkg.gitVersion=$k8s_version -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
  k8s_ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=$build_date"
done

# Sets dir (the module under hack/payload), pkg, version and flags (ldflags) for a file.
step() {
  case $1 in
    kubelet.exe | kube-proxy.exe)
      dir=k8s; version=$k8s_version; pkg=k8s.io/kubernetes/cmd/${1%.exe}; flags=$k8s_ldflags ;;
    kube-log-runner.exe)
      # Runs the kubelet and kube-proxy services with their output in a log file, as in the
      # Kubernetes node binaries for Windows.
      dir=k8s; version=$k8s_version; pkg=k8s.io/component-base/logs/kube-log-runner; flags="" ;;
    containerd.exe)
      dir=containerd; pkg=github.com/containerd/containerd/v2/cmd/containerd
      flags="-X github.com/containerd/containerd/v2/version.Version=VERSION"
      flags+=" -X github.com/containerd/containerd/v2/version.Package=github.com/containerd/containerd/v2" ;;
    ctr.exe)
      # containerd's own client: the agent pulls a pool's spec.prePull images with it
      # (src/agent/windows/containerd-images.ts); same module and version stamp as containerd.
      dir=containerd; pkg=github.com/containerd/containerd/v2/cmd/ctr
      flags="-X github.com/containerd/containerd/v2/version.Version=VERSION"
      flags+=" -X github.com/containerd/containerd/v2/version.Package=github.com/containerd/containerd/v2" ;;
    containerd-shim-runhcs-v1.exe)
      dir=hcsshim; pkg=github.com/Microsoft/hcsshim/cmd/containerd-shim-runhcs-v1; flags="-X main.version=VERSION" ;;
    win-bridge.exe | win-overlay.exe)
      dir=cni; pkg=github.com/containernetworking/plugins/plugins/main/windows/${1%.exe}
      flags="-X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=VERSION" ;;
    host-local.exe)
      dir=cni; pkg=github.com/containernetworking/plugins/plugins/ipam/host-local
      flags="-X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=VERSION" ;;
    flanneld.exe)
      # Built from upstream's main.go less two backends (hack/lib/flanneld-main.sh), in a
      # temporary directory with hack/payload/flannel's go.mod; flags as flannel's Makefile.
      dir=flannel; pkg=./flanneld; flags="-X github.com/flannel-io/flannel/pkg/version.Version=VERSION" ;;
    flannel.exe)
      # flannel's CNI plugin (flannel-vxlan), from containernetworking/plugins v0.9.1.
      dir=flannel-cni; pkg=github.com/containernetworking/plugins/plugins/meta/flannel
      flags="-X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=VERSION" ;;
    sdnbridge.exe | sdnoverlay.exe)
      dir=sdn; pkg=github.com/Microsoft/windows-container-networking/plugins/${1%.exe}; flags="" ;;
    csi-proxy.exe)
      dir=csi-proxy; pkg=github.com/kubernetes-csi/csi-proxy/cmd/csi-proxy; flags="-X main.version=VERSION" ;;
    windows_exporter.exe)
      dir=windows-exporter; pkg=github.com/prometheus-community/windows_exporter/cmd/windows_exporter
      flags="-X github.com/prometheus/common/version.Version=VERSION_NO_V"
      flags+=" -X github.com/prometheus/common/version.Branch=HEAD"
      flags+=" -X github.com/prometheus/common/version.BuildDate=$(module_time windows-exporter github.com/prometheus-community/windows_exporter 20060102-15:04:05)" ;;
  esac
  [ "$dir" = k8s ] || version=$(cat "$p/$dir/VERSION")
  flags=${flags//VERSION_NO_V/${version#v}}
  flags="-s -w ${flags//=VERSION/=$version}"
}

# In order of importance.
names=(kubelet.exe kube-proxy.exe kube-log-runner.exe containerd.exe ctr.exe containerd-shim-runhcs-v1.exe
  win-bridge.exe win-overlay.exe host-local.exe sdnbridge.exe sdnoverlay.exe flanneld.exe flannel.exe
  csi-proxy.exe windows_exporter.exe)
n=${#names[@]}
i=0
failed=()
for name in "${names[@]}"; do
  i=$((i + 1))
  if [ -f "$out/$name" ]; then
    echo "[$i/$n] $name: cached" >&2
    continue
  fi
  step "$name"
  echo "[$i/$n] $name: building $version" >&2
  start=$SECONDS
  rm -f "$out/$name.tmp"
  build_dir=$p/$dir tmp=""
  if [ "$name" = flanneld.exe ]; then
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/winfleet-flanneld-exe-build.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    cp "$p/flannel/go.mod" "$p/flannel/go.sum" "$tmp/"
    mkdir "$tmp/flanneld"
    if flanneld_main "$p/flannel" "$tmp/flanneld"; then build_dir=$tmp; else build_dir=""; fi
  fi
  [ -z "$build_dir" ] ||
    (cd "$build_dir" && go build -v -ldflags "$flags" -o "$out/$name.tmp" "$pkg" 2>&1) | go_build_progress "$start" || true # a failed build is reported below and the others still build
  if [ -n "$tmp" ]; then rm -rf "$tmp"; trap - EXIT; fi
  if [ ! -f "$out/$name.tmp" ]; then
    echo "[$i/$n] $name: build failed" >&2
    failed+=("$name")
    continue
  fi
  mv "$out/$name.tmp" "$out/$name"
  echo "[$i/$n] $name: built in $((SECONDS - start))s ($(du -h "$out/$name" | cut -f1))" >&2
done

rm -f "$out/payload.json"
if [ ${#failed[@]} -gt 0 ]; then
  echo "payload incomplete, no payload.json written; failed: ${failed[*]}" >&2
  exit 1
fi

# The winfleet agent itself (a Node single executable application, scripts/build-agent.ts).
agent_exe=$(cd "$here/.." && node_modules/.bin/node scripts/build-agent.ts | tail -n 1)
cp "$agent_exe" "$out/winfleet-agent.exe.tmp" && mv "$out/winfleet-agent.exe.tmp" "$out/winfleet-agent.exe"
names+=(winfleet-agent.exe)
# Its Windows service shim (Go, windows/service; scripts/build-service-shim.ts), which the
# agent's service runs; Go's build cache makes an unchanged rebuild quick.
(cd "$here/.." && node_modules/.bin/node scripts/build-service-shim.ts "$out" >/dev/null)
names+=(winfleet-service.exe)

# The manifest the operator reads; source.path is relative to this directory.
{
  printf '{\n  "version": "%s",\n  "kubernetesVersion": "%s",\n  "files": [' "$payload_version" "$k8s_version"
  sep=""
  for name in "${names[@]}"; do
    case $name in
      winfleet-agent.exe | winfleet-service.exe) version=$payload_version ;;
      *) step "$name" ;;
    esac
    sha=$(sha256sum "$out/$name" | cut -d' ' -f1)
    printf '%s\n    {"name": "%s", "version": "%s", "sha256": "%s", "source": {"path": "%s"}}' \
      "$sep" "$name" "$version" "$sha" "$name"
    sep=","
  done
  printf '\n  ]\n}\n'
} >"$out/payload.json.tmp"
echo "payload: running its binaries under Wine" >&2
if ! (cd "$here/.." && node_modules/.bin/node scripts/payload-wine-check.ts "$out" "$out/payload.json.tmp"); then
  rm -f "$out/payload.json.tmp"
  echo "payload incomplete, no payload.json written: a binary did not say its version under Wine (above)" >&2
  exit 1
fi
mv "$out/payload.json.tmp" "$out/payload.json"
echo "payload $payload_version: ${#names[@]} files, $(du -sh --exclude=payload.json "$out" | cut -f1)" >&2

# network.mode ovn-hybrid runs hybrid-overlay-node.exe, which cannot be built here (its module,
# ovn-org/ovn-kubernetes/go-controller, is not served): an administrator gives the file (WMCO's
# image has it at /payload/hybrid-overlay-node.exe). The payload with it is a directory of its
# own beside the built one, named by the file's hash, so the built one stays as it is.
if [ -n "${WINFLEET_HYBRID_OVERLAY_NODE:-}" ]; then
  extra=$WINFLEET_HYBRID_OVERLAY_NODE
  if [ ! -f "$extra" ] || [ "$(head -c 2 "$extra")" != MZ ]; then
    echo "WINFLEET_HYBRID_OVERLAY_NODE=$extra is not a Windows executable (no file, or no MZ header): give the path of hybrid-overlay-node.exe" >&2
    exit 1
  fi
  sha=$(sha256sum "$extra" | cut -d' ' -f1)
  with=$out-hybrid-${sha:0:12}
  mkdir -p "$with"
  for name in "${names[@]}"; do ln -f "$out/$name" "$with/$name" 2>/dev/null || cp "$out/$name" "$with/$name"; done
  cp "$extra" "$with/hybrid-overlay-node.exe.tmp" && mv "$with/hybrid-overlay-node.exe.tmp" "$with/hybrid-overlay-node.exe"
  (cd "$here/.." && node_modules/.bin/node -e '
    const fs = require("node:fs");
    const [from, to, sha] = process.argv.slice(1);
    const payload = JSON.parse(fs.readFileSync(from, "utf8"));
    payload.files.push({ name: "hybrid-overlay-node.exe", version: `supplied-${sha.slice(0, 12)}`, sha256: sha, source: { path: "hybrid-overlay-node.exe" } });
    fs.writeFileSync(to, JSON.stringify(payload, null, 2) + "\n");
  ' "$out/payload.json" "$with/payload.json" "$sha")
  echo "payload with the given hybrid-overlay-node.exe (sha256 $sha): $with" >&2
  out=$with
fi
echo "$out"
