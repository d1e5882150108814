#!/usr/bin/env bash
# Builds external-dns into <bin>/external-dns from hack/bench/tools/go.mod (its own module, so
# external-dns never enters dnsplane's go.mod), and copies its DNSEndpoint CRD
# (externaldns.k8s.io) from the module to <bin>/external-dns-crd.yaml. Cached: skipped when
# <bin>/external-dns.version already names the pinned version. Prints how long the build took.
# Usage: hack/bench/build-external-dns.sh [bin-dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${1:-$root/bin}
version=v0.22.0
stamp=$bin/external-dns.version
if [[ -x $bin/external-dns && -f $bin/external-dns-crd.yaml && -f $stamp && $(cat "$stamp") == "$version" ]]; then
  echo "external-dns $version: cached in $bin/external-dns"
  exit 0
fi
mkdir -p "$bin"
start=$(date +%s)
cd "$root/hack/bench/tools"
GOFLAGS=-mod=mod go mod download sigs.k8s.io/external-dns
GOFLAGS=-mod=mod go build -o "$bin/external-dns" sigs.k8s.io/external-dns
dir=$(GOFLAGS=-mod=mod go list -m -f '{{.Dir}}' sigs.k8s.io/external-dns)
cp "$dir/config/crd/standard/dnsendpoints.externaldns.k8s.io.yaml" "$bin/external-dns-crd.yaml"
chmod 0644 "$bin/external-dns-crd.yaml"
echo "$version" >"$stamp"
echo "external-dns $version: built in $(( $(date +%s) - start )) s"
