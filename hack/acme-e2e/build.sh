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
version=lego-v5.6.0-pebble-v2.10.3
cache=${XDG_CACHE_HOME:-$HOME/.cache}/dnsplane/acme-e2e-$version
sum=$(cat "$here/go.mod" "$here/go.sum" "$here/main.go" | sha256sum | cut -c1-16)
mkdir -p "$(dirname "$cache")"
# One build per machine at a time: parallel test binaries wait here, then find it cached.
exec 9>"$cache.lock"
flock 9
if [[ ! -x $cache/lego-issue || ! -x $cache/pebble || "$(cat "$cache/source.sum" 2>/dev/null)" != "$sum" ]]; then
  start=$(date +%s)
  echo "acme-e2e ($version): building" >&2
  scratch=$(mktemp -d "$cache.XXXXXX")
  (cd "$here" && GOFLAGS=-mod=mod go build -trimpath -buildvcs=false -o "$scratch/lego-issue" . &&
    GOFLAGS=-mod=mod go build -trimpath -buildvcs=false -o "$scratch/pebble" github.com/letsencrypt/pebble/v2/cmd/pebble)
  pebble=$(cd "$here" && GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' github.com/letsencrypt/pebble/v2)
  mkdir -p "$scratch/certs"
  cp "$pebble/test/certs/localhost/cert.pem" "$pebble/test/certs/localhost/key.pem" "$pebble/test/certs/pebble.minica.pem" "$scratch/certs/"
  chmod -R u+w "$scratch/certs"
  echo "$sum" >"$scratch/source.sum"
  rm -rf "$cache"
  mv "$scratch" "$cache"
  echo "acme-e2e ($version): built in $(( $(date +%s) - start )) s" >&2
fi
echo "$cache"
