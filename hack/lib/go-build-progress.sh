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
