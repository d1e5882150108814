#!/usr/bin/env bash
# Builds the test RFC 2136 solver (main.go here: cert-manager v1.21.2's own rfc2136 DNS-01 solver
# code, pkg/issuer/acme/dns/rfc2136, behind a present|cleanup CLI) from this directory's module, so
# that cert-manager and the Kubernetes versions it pins never enter dnsplane's go.mod. The binary
# is cached by cert-manager version under
# ${XDG_CACHE_HOME:-~/.cache}/dnsplane/rfc2136-solver-<version>/, keyed also by a hash of this
# module's sources, so that an edit of main.go rebuilds it and an unchanged tree on the same
# machine reuses it. Prints the binary's path as its last line of output.
# Usage: hack/rfc2136-solver/build.sh [bin-dir]   (bin-dir: also install it there)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=v1.21.2
cache=${XDG_CACHE_HOME:-$HOME/.cache}/dnsplane/rfc2136-solver-$version
sum=$(cat "$here/go.mod" "$here/go.sum" "$here/main.go" | sha256sum | cut -c1-16)
mkdir -p "$(dirname "$cache")"
# One build per machine at a time: parallel test binaries wait here, then find it cached.
exec 9>"$cache.lock"
flock 9
if [[ ! -x $cache/rfc2136-solver || "$(cat "$cache/source.sum" 2>/dev/null)" != "$sum" ]]; then
  start=$(date +%s)
  echo "rfc2136-solver (cert-manager $version): building" >&2
  scratch=$(mktemp -d "$cache.XXXXXX")
  (cd "$here" && GOFLAGS=-mod=mod go build -trimpath -buildvcs=false -o "$scratch/rfc2136-solver" .)
  echo "$sum" >"$scratch/source.sum"
  rm -rf "$cache"
  mv "$scratch" "$cache"
  echo "rfc2136-solver (cert-manager $version): built in $(( $(date +%s) - start )) s" >&2
fi
if [[ $# -ge 1 ]]; then
  mkdir -p "$1"
  install -m 0755 "$cache/rfc2136-solver" "$1/rfc2136-solver"
fi
echo "$cache/rfc2136-solver"
