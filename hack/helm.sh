#!/usr/bin/env bash
# Builds helm into <bin>/helm from hack/helm/go.mod (its own module, so helm never enters
# dnsplane's go.mod). The build is cached by version under
# ${XDG_CACHE_HOME:-~/.cache}/dnsplane/helm-<version>/, as the control-plane binaries are
# (hack/envtest-bins.sh), so a fresh clone on the same machine copies it in seconds.
# Usage: hack/helm.sh [bin-dir]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${1:-$root/bin}
version=$(awk '$1 == "require" && $2 == "helm.sh/helm/v3" {print $3}' "$root/hack/helm/go.mod")
[[ -n $version ]] || { echo "helm: no helm.sh/helm/v3 in hack/helm/go.mod" >&2; exit 1; }
cache=${XDG_CACHE_HOME:-$HOME/.cache}/dnsplane/helm-$version
mkdir -p "$bin" "$(dirname "$cache")"
if [[ ! -x $cache/helm ]]; then
  start=$(date +%s)
  echo "helm $version: building from the Go module proxy (once per machine)"
  scratch=$(mktemp -d "$cache.XXXXXX")
  (
    cd "$root/hack/helm"
    # helm reads its own version from these variables (helm.sh/helm/v3/internal/version).
    ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$version"
    CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags="$ldflags" -o "$scratch/helm" helm.sh/helm/v3/cmd/helm
  )
  rm -rf "$cache"
  mv "$scratch" "$cache"
  echo "helm $version: built in $(( $(date +%s) - start )) s"
fi
cmp -s "$cache/helm" "$bin/helm" 2>/dev/null || install -m 0755 "$cache/helm" "$bin/helm"
echo "helm $version: ready in $bin/helm"
