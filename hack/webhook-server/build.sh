#!/usr/bin/env bash
# Builds the test webhook server (main.go here: external-dns v0.22.0's own webhook server code
# around its in-memory or PowerDNS provider) from this directory's module, so that external-dns
# never enters dnsplane's go.mod. The binary is cached by external-dns version and a hash of this
# module's sources under ${XDG_CACHE_HOME:-~/.cache}/dnsplane/webhook-server-<version>-<hash>/, so
# that an edit of main.go builds another binary, which two trees of different sources on one
# machine never overwrite for each other, and an unchanged tree reuses it. Prints the binary's
# path as its last line of output.
# Usage: hack/webhook-server/build.sh [bin-dir]   (bin-dir: also install it there)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
version=v0.22.0
sum=$(cat "$here/go.mod" "$here/go.sum" "$here/main.go" | sha256sum | cut -c1-16)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/dnsplane/webhook-server-$version-$sum
mkdir -p "$(dirname "$cache")"
# One build per machine at a time: parallel test binaries wait here, then find it cached.
exec 9>"$cache.lock"
flock 9
if [[ ! -x $cache/webhook-server || "$(cat "$cache/source.sum" 2>/dev/null)" != "$sum" ]]; then
  start=$(date +%s)
  echo "webhook-server (external-dns $version): building" >&2
  scratch=$(mktemp -d "$cache.XXXXXX")
  (cd "$here" && GOFLAGS=-mod=mod go build -trimpath -buildvcs=false -o "$scratch/webhook-server" .)
  echo "$sum" >"$scratch/source.sum"
  rm -rf "$cache"
  mv "$scratch" "$cache"
  echo "webhook-server (external-dns $version): built in $(( $(date +%s) - start )) s" >&2
fi
if [[ $# -ge 1 ]]; then
  mkdir -p "$1"
  install -m 0755 "$cache/webhook-server" "$1/webhook-server"
fi
echo "$cache/webhook-server"
