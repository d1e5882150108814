#!/usr/bin/env bash
# bins.sh builds, from the Go module proxy, every binary the offline kind node image and its
# control-plane images need that hack/envtest-bins.sh does not already cache, and kind itself:
#   kubelet, kubeadm, kube-scheduler, kube-proxy  k8s.io/kubernetes@$K8S_VERSION, with version ldflags
#   coredns                                       github.com/coredns/coredns@$COREDNS_VERSION
#   pause                                         kubernetes' build/pause/linux/pause.c, static (gcc)
#   kind                                          sigs.k8s.io/kind@$KIND_VERSION
# Each lands in a per-version cache directory under ${XDG_CACHE_HOME:-~/.cache}/dnsplane/
# (kubernetes-<v>/, coredns-<v>/, kind-bin-<v>/), beside envtest-bins' kube-apiserver,
# kube-controller-manager, kubectl and etcd, which the node image reuses as they are.
#
# WHY version ldflags: kubeadm picks the image tags it pulls from its own version, and kubelet
# reports its version in the Node (kubeadm checks it). A plain `go build` says v0.0.0-master.
# WHY the cri-streaming replace: k8s.io/kubelet requires k8s.io/cri-streaming at v0.0.0 like the
# other staging modules, but it is not in kubernetes' go.mod list of requirements at v0.0.0.
# The builds are heavy (kubelet and kubeadm: about 4 min and 2 GB cold); they run at nice 10.
# Usage: hack/kind/bins.sh   (prints nothing on stdout; logs on stderr)
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/versions.env"

cache=${XDG_CACHE_HOME:-$HOME/.cache}/dnsplane
k8s_cache=$cache/kubernetes-$K8S_VERSION
coredns_cache=$cache/coredns-$COREDNS_VERSION
kind_cache=$cache/kind-bin-$KIND_VERSION
mkdir -p "$k8s_cache" "$coredns_cache" "$kind_cache"
STAGING_VERSION="v0${K8S_VERSION#v1}"   # v1.37.2 -> v0.37.2

log() { printf 'kind/bins: %s\n' "$*" >&2; }

# version_ldflags: what `make` in kubernetes stamps (hack/lib/version.sh), for the two packages
# that hold the version (component-base for servers, client-go for clients).
version_ldflags() {
  local v=${K8S_VERSION#v} flags="-s -w" pkg
  local major=${v%%.*} rest=${v#*.}
  local minor=${rest%%.*}
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    flags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=$major -X $pkg.gitMinor=$minor"
    flags+=" -X $pkg.gitCommit=0000000000000000000000000000000000000000 -X $pkg.gitTreeState=clean"
    flags+=" -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  printf '%s' "$flags"
}

build_kube() {
  local missing=() b
  for b in kubelet kubeadm kube-scheduler kube-proxy; do
    [ -x "$k8s_cache/$b" ] || missing+=("$b")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "building ${missing[*]} from k8s.io/kubernetes@$K8S_VERSION (several minutes, once per machine)"
  local scratch start=$SECONDS
  scratch=$(mktemp -d)
  trap 'rm -rf "$scratch"' RETURN
  (
    cd "$scratch"
    go mod init dnsplane.local/kindbins >/dev/null 2>&1
    local gomod replaces=() m
    gomod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^\s*"GoMod": "\(.*\)",\?$/\1/p')
    [ -f "$gomod" ] || { log "cannot download k8s.io/kubernetes@$K8S_VERSION"; exit 1; }
    while read -r m; do
      replaces+=("-replace=$m=$m@$STAGING_VERSION")
    done < <({ awk '$1 ~ /^k8s\.io\// && $2 == "v0.0.0" {print $1}' "$gomod"; echo k8s.io/cri-streaming; } | sort -u)
    go mod edit "${replaces[@]}"
    local pkgs=()
    for b in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b@$K8S_VERSION"); done
    go get "${pkgs[@]}" >/dev/null 2>&1 || go get "${pkgs[@]}"
    mkdir out
    pkgs=()
    for b in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
    CGO_ENABLED=0 nice -n 10 go build -trimpath -ldflags="$(version_ldflags)" -o out/ "${pkgs[@]}"
    for b in "${missing[@]}"; do mv "out/$b" "$k8s_cache/$b"; done
  )
  log "built ${missing[*]} in $((SECONDS - start)) s"
}

build_coredns() {
  [ -x "$coredns_cache/coredns" ] && return 0
  log "building coredns from github.com/coredns/coredns@$COREDNS_VERSION"
  local start=$SECONDS
  CGO_ENABLED=0 GOBIN=$coredns_cache GOFLAGS=-trimpath nice -n 10 \
    go install -ldflags='-s -w' "github.com/coredns/coredns@$COREDNS_VERSION"
  log "built coredns in $((SECONDS - start)) s"
}

# pause is C in the kubernetes sources; a static build needs only gcc and glibc's libc.a.
build_pause() {
  [ -x "$k8s_cache/pause-$PAUSE_VERSION" ] && return 0
  local dir
  dir=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^\s*"Dir": "\(.*\)",\?$/\1/p')
  nice -n 10 gcc -Os -static -DVERSION="$PAUSE_VERSION" -o "$k8s_cache/pause.tmp" "$dir/build/pause/linux/pause.c"
  strip "$k8s_cache/pause.tmp"
  mv "$k8s_cache/pause.tmp" "$k8s_cache/pause-$PAUSE_VERSION"
  log "built pause $PAUSE_VERSION"
}

build_kind() {
  [ -x "$kind_cache/kind" ] && return 0
  log "building kind from sigs.k8s.io/kind@$KIND_VERSION"
  CGO_ENABLED=0 GOBIN=$kind_cache GOFLAGS=-trimpath nice -n 10 go install -ldflags='-s -w' "sigs.k8s.io/kind@$KIND_VERSION"
}

build_kind
build_pause
build_kube
build_coredns
log "ready: $k8s_cache, $coredns_cache, $kind_cache"
