# shellcheck shell=bash
# cached-build.sh: what hack/*/build.sh share to build a test tool from its own Go module (so that
# the tool's dependencies never enter dnsplane's go.mod) once per machine and source tree. Source
# it from a script running with set -euo pipefail.

# module_sum <dir>: the hash (16 hex digits) of dir's go.mod, go.sum and main.go, which keys the
# cache, so that an edit of main.go builds again.
module_sum() { cat "$1/go.mod" "$1/go.sum" "$1/main.go" | sha256sum | cut -c1-16; }

# go_build <module-dir> <output> [package]: build package (default: the module's main package)
# of the module in module-dir into output, reproducibly (-trimpath, no VCS stamp).
go_build() { (cd "$1" && GOFLAGS=-mod=mod go build -trimpath -buildvcs=false -o "$2" "${3:-.}"); }

# cached_build <cache-dir> <sum> <label> <build-function> <binary>...: leave cache-dir holding the
# binaries built from the sources of hash sum. Under a per-machine lock (<cache-dir>.lock, held
# until the script exits: parallel test binaries wait, then find it built), unless cache-dir
# already holds every binary and its source.sum is sum, build-function <scratch-dir> builds into
# a fresh directory, which then replaces cache-dir whole. label names the tool in the progress
# lines on stderr.
cached_build() {
  local cache=$1 sum=$2 label=$3 build=$4 fresh=1 bin start scratch
  shift 4
  mkdir -p "$(dirname "$cache")"
  exec 9>"$cache.lock"
  flock 9
  for bin in "$@"; do
    [[ -x $cache/$bin ]] || fresh=0
  done
  [[ $fresh = 1 && "$(cat "$cache/source.sum" 2>/dev/null)" = "$sum" ]] && return 0
  start=$(date +%s)
  echo "$label: building" >&2
  scratch=$(mktemp -d "$cache.XXXXXX")
  "$build" "$scratch"
  echo "$sum" >"$scratch/source.sum"
  rm -rf "$cache"
  mv "$scratch" "$cache"
  echo "$label: built in $(( $(date +%s) - start )) s" >&2
}

# print_bin <binary> [bin-dir]: install binary into bin-dir when given, then print its cached
# path (the build script's last line of output).
print_bin() {
  if [[ $# -ge 2 ]]; then
    mkdir -p "$2"
    install -m 0755 "$1" "$2/$(basename "$1")"
  fi
  echo "$1"
}
