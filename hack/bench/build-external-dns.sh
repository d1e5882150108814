#!/usr/bin/env bash
# Builds external-dns into <bin>/external-dns from hack/bench/tools/go.mod (its own module, so
# external-dns never enters dnsplane's go.mod), and copies its DNSEndpoint CRD
# (externaldns.k8s.io) from the module to <bin>/external-dns-crd.yaml. The build is cached by
# version under ${XDG_CACHE_HOME:-~/.cache}/dnsplane/external-dns-<version>/, as the control-plane
# binaries are (hack/envtest-bins.sh), so a fresh clone on the same machine copies it in seconds.
# Prints how long the build took (496 s cold here, on 2 cores beside a test run; 46 min once on a
# heavily loaded machine).
# Usage: hack/bench/build-external-dns.sh [bin-dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-$root/bin}
version=v0.22.0
cache=${XDG_CACHE_HOME:-$HOME/.cache}/dnsplane/external-dns-$version
mkdir -p "$bin" "$(dirname "$cache")"
# One build per machine at a time: .ci/run starts one in the background, and make e2e's call
# waits here for it, then finds it cached.
exec 9>"$cache.lock"
flock 9
if [[ ! -x $cache/external-dns || ! -f $cache/external-dns-crd.yaml ]]; then
  start=$(date +%s)
  echo "external-dns $version: building from the Go module proxy (once per machine)"
  scratch=$(mktemp -d "$cache.XXXXXX")
  (
    cd "$root/hack/bench/tools"
    GOFLAGS=-mod=mod go mod download sigs.k8s.io/external-dns
    GOFLAGS=-mod=mod go build -o "$scratch/external-dns" sigs.k8s.io/external-dns
    dir=$(GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' sigs.k8s.io/external-dns)
    cp "$dir/config/crd/standard/dnsendpoints.externaldns.k8s.io.yaml" "$scratch/external-dns-crd.yaml"
    chmod 0644 "$scratch/external-dns-crd.yaml"
  )
  rm -rf "$cache"
  mv "$scratch" "$cache"
  echo "external-dns $version: built in $(( $(date +%s) - start )) s"
else
  echo "external-dns $version: cached in $cache"
fi
install -m 0755 "$cache/external-dns" "$bin/external-dns"
install -m 0644 "$cache/external-dns-crd.yaml" "$bin/external-dns-crd.yaml"
echo "$version" >"$bin/external-dns.version"
