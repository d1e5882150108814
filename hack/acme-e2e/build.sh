#!/usr/bin/env bash
# Builds the end-to-end ACME tools of the dynamic-updates tests from this directory's module, so that neither
# enters dnsplane's go.mod: lego-issue (main.go: lego v5.6.0 and its RFC 2136 DNS-01 provider,
# obtaining one certificate) and pebble (Let's Encrypt's test CA, v2.10.3, the tool directive),
# with Pebble's test TLS certificate, key and root (test/certs of its module). They are cached
# under ${XDG_CACHE_HOME:-~/.cache}/dnsplane/acme-e2e-<versions>/, keyed also by a hash of this
# module's sources, so that an edit of main.go rebuilds them and an unchanged tree on the same
# machine reuses them. Prints the cache directory as its last line of output.
# Usage: hack/acme-e2e/build.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=../lib/cached-build.sh
. "$here/../lib/cached-build.sh"
version=lego-v5.6.0-pebble-v2.10.3
# build <dir>: lego-issue, pebble, and Pebble's test certificates in <dir>/certs.
build() {
  local pebble
  go_build "$here" "$1/lego-issue"
  go_build "$here" "$1/pebble" github.com/letsencrypt/pebble/v2/cmd/pebble
  pebble=$(cd "$here" && GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' github.com/letsencrypt/pebble/v2)
  mkdir -p "$1/certs"
  cp "$pebble/test/certs/localhost/cert.pem" "$pebble/test/certs/localhost/key.pem" "$pebble/test/certs/pebble.minica.pem" "$1/certs/"
  chmod -R u+w "$1/certs"
}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/dnsplane/acme-e2e-$version
cached_build "$cache" "$(module_sum "$here")" "acme-e2e ($version)" build lego-issue pebble
echo "$cache"
