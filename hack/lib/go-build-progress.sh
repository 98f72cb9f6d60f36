# Sourced by the hack/build-*.sh scripts. go_build_progress START reads `go build -v` output on
# stdin: each package name it prints counts as progress (a counter on a terminal, a line every
# 100 packages otherwise, with the seconds since START), and compiler and module errors are
# shown as they come. Package names have no spaces; errors do.
go_build_progress() {
  local start=$1 count=0 line
  while IFS= read -r line; do
    count=$((count + 1))
    if [ -t 2 ]; then printf '\r      %4d packages compiled, %ds' "$count" $((SECONDS - start)) >&2
    elif [ $((count % 100)) -eq 0 ]; then echo "      $count packages compiled, $((SECONDS - start))s" >&2; fi
    case $line in "go: downloading "*) ;; *" "* | *.go:*) echo "$line" >&2 ;; esac
  done
  if [ -t 2 ]; then echo >&2; fi
}

# cache_lock DIR: holds an exclusive lock on DIR/.lock until the script exits, so that two
# builds into one cache directory (two worktrees, `make test` twice at once) take turns instead
# of moving or deleting each other's output. Says so when it has to wait. Without flock
# (util-linux, which hack/ensure-packages.sh installs) it goes on unlocked, saying so.
cache_lock() {
  local dir=$1
  if ! command -v flock >/dev/null 2>&1; then
    echo "      (flock not found: building without a lock; install util-linux)" >&2
    return 0
  fi
  exec 9>"$dir/.lock"
  if ! flock -n 9; then
    echo "      waiting for another build into $dir to finish" >&2
    flock 9
  fi
}
