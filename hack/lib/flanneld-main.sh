# Sourced by hack/build-netlab.sh (Linux flanneld) and hack/build-payload.sh (flanneld.exe).
# flanneld_main MODULE DIR writes upstream's main.go (github.com/flannel-io/flannel at the
# version the module directory MODULE pins) into DIR/main.go without the blank imports of the
# backends in flanneld_dropped, checking that each was imported exactly once and that every
# other import is pinned in MODULE/tools.go. The caller builds DIR with MODULE's go.mod and
# go.sum beside it; nothing of upstream's is kept in this repository.

# The flannel backends left out of the build, with why. The vxlan and host-gw backends, and the
# others, are unchanged.
flanneld_dropped=(
  # its SDK (github.com/tencentcloud/tencentcloud-sdk-go/tencentcloud/vpc) is refused by the
  # module proxy; on Windows the package is empty (tencentvpc_windows.go)
  github.com/flannel-io/flannel/pkg/backend/tencentvpc
  # needs cgo on Linux; on Windows the package is empty (udp_windows.go)
  github.com/flannel-io/flannel/pkg/backend/udp
)

flanneld_main() {
  local module=$1 dir=$2 version src pkg imports missing=()
  # Into the module cache first: `go list -m` names no directory for a module not downloaded.
  (cd "$module" && go mod download github.com/flannel-io/flannel) || return 1
  version=$(cd "$module" && go list -m -f '{{.Version}}' github.com/flannel-io/flannel)
  src=$(cd "$module" && go list -m -f '{{.Dir}}' github.com/flannel-io/flannel)
  cp "$src/main.go" "$dir/main.go"
  chmod u+w "$dir/main.go"
  for pkg in "${flanneld_dropped[@]}"; do
    if [ "$(grep -c "^[[:space:]]*_ \"$pkg\"\$" "$dir/main.go")" != 1 ]; then
      echo "flannel $version's main.go does not import $pkg once as a blank import; update hack/lib/flanneld-main.sh" >&2
      return 1
    fi
    sed -i "\|^[[:space:]]*_ \"$pkg\"\$|d" "$dir/main.go"
  done
  imports=$(sed -n '/^import (/,/^)/p' "$dir/main.go" | grep -oE '"[a-z0-9.-]+\.[a-z]+/[^"]+"' | tr -d '"')
  for pkg in $imports; do
    grep -qF "_ \"$pkg\"" "$module/tools.go" || missing+=("$pkg")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "flannel $version's main.go imports ${missing[*]}, not pinned in $module/tools.go;" >&2
    echo "  add them there and run: cd $module && go mod tidy" >&2
    return 1
  fi
}
