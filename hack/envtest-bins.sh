#!/usr/bin/env bash
# envtest-bins.sh builds the local control-plane binaries from Go modules and puts them in bin/:
#   kube-apiserver, kube-controller-manager, kubectl  (k8s.io/kubernetes ${K8S_VERSION})
#   etcd                                              (go.etcd.io/etcd/server/v3 ${ETCD_VERSION})
# The binaries are cached by version under ${XDG_CACHE_HOME:-~/.cache}/dnsplane/, so a fresh clone
# on the same machine reuses them. When bin/ already holds the right versions it does nothing.
# Usage: hack/envtest-bins.sh [bin-dir]
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.37.2}
ETCD_VERSION=${ETCD_VERSION:-v3.6.16}
STAGING_VERSION="v0${K8S_VERSION#v1}"   # v1.37.2 -> v0.37.2

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
bindir=${1:-$root/bin}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/dnsplane
k8s_cache=$cache/kubernetes-$K8S_VERSION
etcd_cache=$cache/etcd-$ETCD_VERSION
mkdir -p "$bindir" "$k8s_cache" "$etcd_cache"
# One build at a time per cache: .ci/run builds the kind node image (which runs this script too)
# beside its own run of it; the second waits here and then finds the binaries cached.
exec 9>"$cache/.envtest-bins.lock"
flock 9

log() { printf 'envtest-bins: %s\n' "$*" >&2; }

build_kube() {
  local missing=()
  for b in kube-apiserver kube-controller-manager kubectl; do
    [ -x "$k8s_cache/$b" ] || missing+=("$b")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "building ${missing[*]} from k8s.io/kubernetes@$K8S_VERSION (several minutes, once per machine)"
  local scratch
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' RETURN
  (
    cd "$scratch"
    go mod init dnsplane.local/kubebins >/dev/null 2>&1
    # k8s.io/kubernetes requires its staging modules at v0.0.0; point each at the released tag.
    local gomod
    gomod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^\s*"GoMod": "\(.*\)",\?$/\1/p')
    [ -f "$gomod" ] || { log "cannot download k8s.io/kubernetes@$K8S_VERSION"; exit 1; }
    # Staging modules are the ones required at exactly v0.0.0 (pseudo-versions are real modules).
    local replaces=()
    while read -r m; do
      replaces+=("-replace=$m=$m@$STAGING_VERSION")
    done < <(awk '$1 ~ /^k8s\.io\// && $2 == "v0.0.0" {print $1}' "$gomod" | sort -u)
    [ ${#replaces[@]} -gt 0 ] || { log "found no staging modules in $gomod"; exit 1; }
    go mod edit "${replaces[@]}"
    local pkgs=()
    for b in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b@$K8S_VERSION"); done
    go get "${pkgs[@]}"
    for b in "${missing[@]}"; do
      CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$k8s_cache/$b.tmp" "k8s.io/kubernetes/cmd/$b"
      mv "$k8s_cache/$b.tmp" "$k8s_cache/$b"
      log "built $b"
    done
  )
}

build_etcd() {
  [ -x "$etcd_cache/etcd" ] && return 0
  log "building etcd from go.etcd.io/etcd/server/v3@$ETCD_VERSION"
  local scratch
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' RETURN
  (
    cd "$scratch"
    go mod init dnsplane.local/etcdbin >/dev/null 2>&1
    go get "go.etcd.io/etcd/server/v3@$ETCD_VERSION" >/dev/null
    CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$etcd_cache/etcd.tmp" go.etcd.io/etcd/server/v3
    mv "$etcd_cache/etcd.tmp" "$etcd_cache/etcd"
    log "built etcd"
  )
}

build_etcd
build_kube

for b in kube-apiserver kube-controller-manager kubectl; do
  cmp -s "$k8s_cache/$b" "$bindir/$b" 2>/dev/null || cp "$k8s_cache/$b" "$bindir/$b"
done
cmp -s "$etcd_cache/etcd" "$bindir/etcd" 2>/dev/null || cp "$etcd_cache/etcd" "$bindir/etcd"
log "ready in $bindir: etcd $ETCD_VERSION, kube-apiserver kube-controller-manager kubectl $K8S_VERSION"
