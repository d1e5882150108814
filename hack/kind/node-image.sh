#!/usr/bin/env bash
# node-image.sh builds a kind node image with no registry, for machines that cannot pull
# kindest/node (facts: ../shared/design/kind-offline.md), and prints its name on stdout. Steps:
#   1. binaries (hack/kind/bins.sh, hack/envtest-bins.sh): kubelet, kubeadm, kube-scheduler,
#      kube-proxy, coredns, pause, kind; kube-apiserver, kube-controller-manager, kubectl, etcd
#      are envtest-bins' own, reused as they are. They build (CPU) while step 3's debootstrap
#      (network, dpkg) runs beside them; the image is assembled when both are done;
#   2. the images kubeadm expects, named as `kubeadm config images list` says (registry.k8s.io/...):
#      each a static binary in an otherwise empty rootfs, `podman import`ed (FROM scratch needs no
#      pull). kube-proxy is the exception: it runs iptables, so its image is the node's Debian
#      rootfs plus the binary;
#   3. the node rootfs: `debootstrap --variant=minbase bookworm` with systemd, containerd, runc, the
#      CNI plugins and iptables from Debian packages (no image to start FROM), then kind's base
#      files (entrypoint, kubelet units) from the sigs.k8s.io/kind module, then this directory's
#      files/ (each says why: cgroup v1 and the missing cap_sys_resource), kubelet, kubeadm,
#      kubectl, and the images of step 2 under /kind/images (imported at boot, kind-preload.service);
#   4. `podman import` with kind's ENTRYPOINT, ENV container=docker and STOPSIGNAL SIGRTMIN+3.
# Cache: the image archive is kept under ${XDG_CACHE_HOME:-~/.cache}/dnsplane/kind-<hash>/, where
# <hash> is the sha256 of the recipe (this file, bins.sh, versions.env, files/); the debootstrap
# tarball under kind-rootfs-<hash of suite and packages>/. A warm run only checks podman's store
# (or loads the archive): seconds. The binaries are cached per version (bins.sh).
# Needs root (debootstrap, podman), go, gcc; installs debootstrap, podman and runc when missing.
# Usage: hack/kind/node-image.sh    (prints e.g. dnsplane.local/kind-node:v1.37.2-0123456789ab)
set -euo pipefail
KIND_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PROG=kind/node-image
source "$KIND_DIR/../lib/podman.sh"
source "$KIND_DIR/versions.env"

CACHE=${XDG_CACHE_HOME:-$HOME/.cache}/dnsplane
K8S_CACHE=$CACHE/kubernetes-$K8S_VERSION
# The packages of the node, as kind's base image has them (minus nfs, iscsi and fuse-overlayfs).
PACKAGES=systemd,systemd-sysv,dbus,containerd,runc,containernetworking-plugins,iptables,conntrack,ethtool,socat,iproute2,kmod,procps,ca-certificates,libseccomp2,mount,util-linux,pigz,nftables,ebtables,bash

# recipe_hash covers what goes into the image: this recipe, bins.sh, versions.env and files/
# (not dnsq/ or the cluster scripts, which the image does not hold).
recipe_hash() {
  (cd "$KIND_DIR" && find node-image.sh bins.sh versions.env files -type f ! -name '*.md' -print0 | LC_ALL=C sort -z | xargs -0 sha256sum) |
    { cat; printf '%s\n' "$K8S_VERSION" "$ETCD_VERSION" "$COREDNS_VERSION" "$KIND_VERSION" "$PAUSE_VERSION" \
      "$DEBIAN_SUITE" "$DEBIAN_MIRROR"; } | sha256sum | cut -c1-12
}
HASH=$(recipe_hash)
IMAGE=dnsplane.local/kind-node:$K8S_VERSION-$HASH
OUT=$CACHE/kind-$HASH

ensure_debs() {
  local missing=() p
  for p in debootstrap podman runc; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  log "installing ${missing[*]} (Debian packages)"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# debootstrap_rootfs prints the path of the cached bookworm rootfs tarball, building it once.
debootstrap_rootfs() {
  local h dir
  h=$(printf '%s %s %s' "$DEBIAN_SUITE" "$DEBIAN_MIRROR" "$PACKAGES" | sha256sum | cut -c1-12)
  dir=$CACHE/kind-rootfs-$h
  if [ ! -s "$dir/rootfs.tar" ]; then
    log "debootstrap $DEBIAN_SUITE with $PACKAGES (once per machine, a few minutes)"
    local tmp start=$SECONDS
    tmp=$(mktemp -d "$CACHE/kind-rootfs.XXXXXX")
    # Its output goes to a log (it runs beside the Go builds, whose output it would bury).
    nice -n 10 debootstrap --variant=minbase --include="$PACKAGES" "$DEBIAN_SUITE" "$tmp/root" "$DEBIAN_MIRROR" \
      >"$tmp/debootstrap.log" 2>&1 || { tail -n 30 "$tmp/debootstrap.log" >&2; rm -rf "$tmp/root"; die "debootstrap failed: its log is $tmp/debootstrap.log"; }
    rm -rf "$tmp/root/var/cache/apt/archives/"*.deb "$tmp/root/var/lib/apt/lists/"*
    tar -C "$tmp/root" --numeric-owner -cf "$tmp/rootfs.tar" .
    rm -rf "$tmp/root" "$dir"
    mv "$tmp" "$dir"
    log "debootstrap done in $((SECONDS - start)) s"
  fi
  printf '%s' "$dir/rootfs.tar"
}

# binary_for maps an image kubeadm expects to the cached binary it holds.
binary_for() {
  case $1 in
    */kube-apiserver:* | */kube-controller-manager:*) local b=${1##*/}; printf '%s' "$K8S_CACHE/${b%%:*}" ;;
    */kube-scheduler:* | */kube-proxy:*) local b=${1##*/}; printf '%s' "$K8S_CACHE/${b%%:*}" ;;
    */etcd:*) printf '%s' "$CACHE/etcd-$ETCD_VERSION/etcd" ;;
    */coredns:*) printf '%s' "$CACHE/coredns-$COREDNS_VERSION/coredns" ;;
    */pause:*) printf "%s" "$K8S_CACHE/pause-$PAUSE_VERSION" ;;
    *) die "no binary for image $1" ;;
  esac
}

# component_image makes one image: the binary at /usr/local/bin/<name> (kubeadm's static pods
# run it by name; kube-proxy's DaemonSet by /usr/local/bin/kube-proxy), or at /coredns and
# /pause as the upstream images have them. $3 is the rootfs to start from ("" for empty).
component_image() {
  local ref=$1 archive=$2 base=$3 bin name entry
  bin=$(binary_for "$ref")
  name=${ref##*/}; name=${name%%:*}
  local ctx
  ctx=$(mktemp -d)
  mkdir -p "$ctx/usr/local/bin" "$ctx/tmp" "$ctx/etc"
  chmod 1777 "$ctx/tmp"
  case $name in
    coredns) cp "$bin" "$ctx/coredns"; entry='["/coredns"]' ;;
    pause) cp "$bin" "$ctx/pause"; entry='["/pause"]' ;;
    *) cp "$bin" "$ctx/usr/local/bin/$name"; entry="[\"/usr/local/bin/$name\"]" ;;
  esac
  echo 'nobody:x:65534:65534:nobody:/:/sbin/nologin' >"$ctx/etc/passwd"
  if [ -n "$base" ]; then
    cp "$base" "$ctx.tar"
    tar -C "$ctx" --numeric-owner --owner=0 --group=0 -rf "$ctx.tar" "./usr/local/bin/$name"
  else
    tar -C "$ctx" --numeric-owner --owner=0 --group=0 -cf "$ctx.tar" .
  fi
  podman import -q --change "ENTRYPOINT $entry" --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' "$ctx.tar" "$ref" >/dev/null
  podman save -q --format docker-archive -o "$archive" "$ref" >/dev/null
  rm -rf "$ctx" "$ctx.tar"
}

# node_rootfs assembles the node's root filesystem in $1 from the debootstrap tarball $2.
node_rootfs() {
  local root=$1 deb=$2 kindmod
  mkdir -p "$root"
  tar -C "$root" --numeric-owner -xf "$deb"
  kindmod=$(go mod download -json "sigs.k8s.io/kind@$KIND_VERSION" | sed -n 's/^\s*"Dir": "\(.*\)",\?$/\1/p')
  local kb=$kindmod/images/base/files
  # kind's base files: the entrypoint (cgroup and mount fix-ups), kubelet.service and drop-ins,
  # sysctls, crictl.yaml, /kind/bin helpers. Its containerd.service runs /usr/local/bin/containerd.
  install -m 0755 "$kb/usr/local/bin/"* "$root/usr/local/bin/"
  mkdir -p "$root/kind/bin" "$root/etc/systemd/system/kubelet.service.d" "$root/etc/kubernetes/manifests"
  install -m 0755 "$kb/kind/bin/"* "$root/kind/bin/"
  install -m 0644 "$kb/etc/crictl.yaml" "$root/etc/"
  install -m 0644 "$kb/etc/default/kubelet" "$root/etc/default/"
  install -m 0644 "$kb/etc/sysctl.d/"* "$root/etc/sysctl.d/"
  install -m 0644 "$kb/etc/systemd/system/"*.service "$kb/etc/systemd/system/kubelet.slice" "$root/etc/systemd/system/"
  install -m 0644 "$kb/etc/systemd/system/kubelet.service.d/"* "$root/etc/systemd/system/kubelet.service.d/"
  rm -f "$root/etc/systemd/system/containerd-fuse-overlayfs.service"
  ln -sf /usr/bin/containerd "$root/usr/local/bin/containerd"
  # Debian's CNI plugins live in /usr/lib/cni; containerd's CRI looks in /opt/cni/bin.
  mkdir -p "$root/opt/cni"
  ln -sfn /usr/lib/cni "$root/opt/cni/bin"
  # This recipe's files (each says why), with the pause tag kubeadm expects.
  cp -a "$KIND_DIR/files/." "$root/"
  sed -i "s|@PAUSE_VERSION@|$PAUSE_TAG|" "$root/etc/containerd/config.toml"
  install -m 0755 "$K8S_CACHE/kubelet" "$K8S_CACHE/kubeadm" "$K8S_CACHE/kubectl" "$root/usr/bin/"
  echo "$K8S_VERSION" >"$root/kind/version"
  # What kind's Dockerfile does after its packages: no services kind does not start itself, no
  # kernel log reads (the node cannot read /dev/kmsg's ring on every host).
  find "$root/lib/systemd/system/sysinit.target.wants/" -name systemd-tmpfiles-setup.service -delete
  rm -f "$root/lib/systemd/system/multi-user.target.wants/"* "$root/etc/systemd/system/"*.wants/*
  rm -f "$root/lib/systemd/system/local-fs.target.wants/"* "$root/lib/systemd/system/basic.target.wants/"*
  rm -f "$root/lib/systemd/system/sockets.target.wants/"*udev* "$root/lib/systemd/system/sockets.target.wants/"*initctl*
  echo "ReadKMsg=no" >>"$root/etc/systemd/journald.conf"
  systemctl --root="$root" enable kubelet.service containerd.service undo-mount-hacks.service kind-preload.service >/dev/null 2>&1
  systemctl --root="$root" mask systemd-binfmt.service >/dev/null 2>&1
}

# inputs makes what the image is assembled from, two jobs at once: the debootstrap rootfs
# (network and dpkg bound) in the background, and the Go builds (CPU bound: bins.sh, then
# envtest-bins.sh, which shares their GOCACHE: same flags, same module versions) in the
# foreground. It waits for both, fails naming the one that failed, and prints the rootfs path.
inputs() {
  local work=$1 deb_pid deb_rc=0 go_rc=0
  debootstrap_rootfs >"$work/rootfs.path" &
  deb_pid=$!
  { "$KIND_DIR/bins.sh" && "$KIND_DIR/../envtest-bins.sh" "$REPO/bin" >&2; } || go_rc=$?
  wait "$deb_pid" || deb_rc=$?
  [ "$deb_rc" -eq 0 ] || die "the node rootfs (debootstrap) failed, exit $deb_rc (see above)"
  [ "$go_rc" -eq 0 ] || die "building the node's binaries failed, exit $go_rc (hack/kind/bins.sh, hack/envtest-bins.sh; see above)"
  cat "$work/rootfs.path"
}

build() {
  ensure_debs
  local deb start=$SECONDS work
  mkdir -p "$CACHE"
  work=$(mktemp -d "$CACHE/kind-build.XXXXXX")
  trap 'rm -rf "$work"' RETURN
  deb=$(inputs "$work")
  mkdir -p "$work/images"
  local refs
  refs=$("$K8S_CACHE/kubeadm" config images list --kubernetes-version "$K8S_VERSION" 2>/dev/null)
  PAUSE_TAG=$(grep '/pause:' <<<"$refs" | sed 's/.*://')
  local ref i=0 base
  for ref in $refs; do
    base=""
    [[ $ref == */kube-proxy:* ]] && base=$deb
    component_image "$ref" "$work/images/$i.tar" "$base"
    i=$((i + 1))
  done
  node_rootfs "$work/root" "$deb"
  mkdir -p "$work/root/kind/images"
  mv "$work/images/"*.tar "$work/root/kind/images/"
  tar -C "$work/root" --numeric-owner -cf "$work/node.tar" .
  podman import -q --change 'ENTRYPOINT ["/usr/local/bin/entrypoint","/sbin/init"]' \
    --change 'ENV container=docker' --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
    --change 'STOPSIGNAL SIGRTMIN+3' "$work/node.tar" "$IMAGE" >/dev/null
  mkdir -p "$OUT.tmp"
  podman save -q --format docker-archive -o "$OUT.tmp/node-image.tar" "$IMAGE" >/dev/null
  rm -rf "$OUT"
  mv "$OUT.tmp" "$OUT"
  log "built $IMAGE in $((SECONDS - start)) s (cached in $OUT)"
}

if ! podman image exists "$IMAGE"; then
  if [ -s "$OUT/node-image.tar" ]; then
    podman load -q -i "$OUT/node-image.tar" >/dev/null
    podman image exists "$IMAGE" || die "$OUT/node-image.tar did not hold $IMAGE: remove $OUT"
  else
    build
  fi
fi
printf '%s\n' "$IMAGE"
