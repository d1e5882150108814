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
# shellcheck source=../lib/cached-build.sh
. "$here/../lib/cached-build.sh"
version=v0.22.0
sum=$(module_sum "$here")
build() { go_build "$here" "$1/webhook-server"; }
cache=${XDG_CACHE_HOME:-$HOME/.cache}/dnsplane/webhook-server-$version-$sum
cached_build "$cache" "$sum" "webhook-server (external-dns $version)" build webhook-server
print_bin "$cache/webhook-server" "$@"
