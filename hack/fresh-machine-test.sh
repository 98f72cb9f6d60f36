#!/usr/bin/env bash
# Runs `make test` as on a machine with nothing installed or cached, without a container, and
# can be repeated: a clean clone of HEAD in a new directory, every cache the set-up fills
# (winfleet's, Go's build and module caches, npm's, Wine's prefix) pointed at empty
# directories, and with --remove-packages the Debian packages hack/ensure-packages.sh installs
# removed first (it installs them again; that is what is being checked). Go itself stays: the
# set-up never installs it (hack/ensure-packages.sh says how to get it).
#
# Usage: sudo bash hack/fresh-machine-test.sh [--remove-packages] [--keep]
#   --remove-packages  apt-get remove docker-registry wine64 chromium iptables iputils-ping first
#                      (kubectl and npm stay: on these machines they do not come from Debian, so
#                      removing them would test another machine; iproute2 stays: every image has
#                      it and much depends on it; hack/test-setup.sh covers their branches)
#   --keep             keep the work directory (the clone, the caches and the log)
# Prints the run's test counts, its slowest files and its total time; exits with make's status.
set -uo pipefail
remove_packages=false keep=false
for arg in "$@"; do
  case $arg in
    --remove-packages) remove_packages=true ;;
    --keep) keep=true ;;
    *) echo "hack/fresh-machine-test.sh: unknown option $arg (use --remove-packages, --keep)" >&2; exit 2 ;;
  esac
done
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d /tmp/winfleet-fresh-machine.XXXXXX) || exit 1
log="$work/make-test.log"
$keep || trap 'rm -rf "$work"' EXIT

if $remove_packages; then
  [ "$(id -u)" -eq 0 ] || { echo "hack/fresh-machine-test.sh: --remove-packages needs root" >&2; exit 1; }
  echo "==> apt-get remove docker-registry wine64 chromium iptables iputils-ping" >&2
  DEBIAN_FRONTEND=noninteractive apt-get remove -y -q docker-registry wine64 chromium iptables iputils-ping >/dev/null ||
    { echo "hack/fresh-machine-test.sh: apt-get remove failed" >&2; exit 1; }
fi

echo "==> a clean clone of $(git -C "$repo" rev-parse --short HEAD) in $work/winfleet" >&2
git clone -q --no-local "$repo" "$work/winfleet" || exit 1
git -C "$work/winfleet" checkout -q "$(git -C "$repo" rev-parse HEAD)" || exit 1

mkdir -p "$work/cache" "$work/go" "$work/npm-cache" "$work/home"
start=$SECONDS
(
  cd "$work/winfleet" &&
    env CI=true \
      HOME="$work/home" \
      XDG_CACHE_HOME="$work/cache" \
      WINFLEET_CACHE="$work/cache/winfleet" \
      GOCACHE="$work/go/build-cache" \
      GOMODCACHE="$work/go/mod" \
      GOPATH="$work/go/path" \
      npm_config_cache="$work/npm-cache" \
      make test
) >"$log" 2>&1
rc=$?
elapsed=$((SECONDS - start))
grep -E '^ℹ (tests|pass|fail) |slowest test files|^ *[0-9.]+ (s|min)' "$log" | tail -30 >&2
printf 'make test on a fresh machine: exit %d after %d min %02d s; log %s\n' \
  "$rc" $((elapsed / 60)) $((elapsed % 60)) "$log" >&2
$keep || echo "(the log goes with the work directory; use --keep to keep it)" >&2
exit $rc
