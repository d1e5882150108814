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
# shellcheck source=../lib/cached-build.sh
. "$here/../lib/cached-build.sh"
version=v1.21.2
build() { go_build "$here" "$1/rfc2136-solver"; }
cache=${XDG_CACHE_HOME:-$HOME/.cache}/dnsplane/rfc2136-solver-$version
cached_build "$cache" "$(module_sum "$here")" "rfc2136-solver (cert-manager $version)" build rfc2136-solver
print_bin "$cache/rfc2136-solver" "$@"
