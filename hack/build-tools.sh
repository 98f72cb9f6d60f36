#!/usr/bin/env bash
# Builds the Go tools the build and tests use (helm, crane; pinned in hack/tools/go.mod) into a
# cache directory keyed by go.sum; skips what is built. Prints that directory as its last line.
#   bash hack/build-tools.sh            # every tool
#   bash hack/build-tools.sh helm       # only the tools named
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib/go-build-progress.sh"
cache=${WINFLEET_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/winfleet}
key=$(cat "$here/tools/go.mod" "$here/tools/go.sum" | sha256sum | cut -c1-12)
out="$cache/tools/$key"
mkdir -p "$out"
cache_lock "$out"
export CGO_ENABLED=0 GOFLAGS=-trimpath

declare -A pkgs=(
  [helm]=helm.sh/helm/v4/cmd/helm
  [crane]=github.com/google/go-containerregistry/cmd/crane
)
want=("$@")
[ ${#want[@]} -eq 0 ] && want=(helm crane)
n=${#want[@]}
i=0
for name in "${want[@]}"; do
  i=$((i + 1))
  pkg=${pkgs[$name]:-}
  if [ -z "$pkg" ]; then echo "unknown tool $name (known: ${!pkgs[*]})" >&2; exit 2; fi
  if [ -x "$out/$name" ]; then
    echo "[$i/$n] $name: cached" >&2
    continue
  fi
  echo "[$i/$n] $name: building from the Go module proxy" >&2
  start=$SECONDS
  flags="-s -w"
  if [ "$name" = helm ]; then
    version=$(cd "$here/tools" && go list -m -f '{{.Version}}' helm.sh/helm/v4)
    flags+=" -X helm.sh/helm/v4/internal/version.version=$version"
  fi
  (cd "$here/tools" && go build -v -ldflags "$flags" -o "$out/$name.tmp" "$pkg" 2>&1) | go_build_progress "$start"
  if [ ! -f "$out/$name.tmp" ]; then echo "[$i/$n] $name: build failed" >&2; exit 1; fi
  mv "$out/$name.tmp" "$out/$name"
  echo "[$i/$n] $name: built in $((SECONDS - start))s ($(du -h "$out/$name" | cut -f1))" >&2
done
echo "$out"
