#!/usr/bin/env bash
# load.sh builds the manager image and the dnsq image again and loads them into a kind cluster
# that hack/kind/cluster.sh made, leaving the cluster, its release and its objects as they are
# (`make kind-load`; docs/install.md, "Try it on kind", "A newer manager image"). It prints the
# kubeconfig path, the new image's tag and the node's address on stdout as shell assignments
# (KUBECONFIG=..., TAG=..., NODE_IP=...), as cluster.sh does. The tag is `make version`; a tree
# with uncommitted changes (a -dirty version) gets a timestamp after it, so that each load has a
# tag of its own and `helm upgrade --set image.tag=$TAG` rolls the new image out (the chart's
# pullPolicy Never reads the node's image by tag, and the same tag changes no Pod).
# Usage: hack/kind/load.sh [name, default dnsplane]    (`make kind-load KIND_CLUSTER=<name>`)
# Environment: KIND_EXPERIMENTAL_PROVIDER, TAG (the image tag to build and load).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
name=${1:-dnsplane}
log() { printf 'kind-load: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
# shellcheck source=lib.sh
source hack/kind/lib.sh
kind_engine
kind_tools >&2
kind get clusters 2>/dev/null | grep -qx "$name" ||
  die "no kind cluster \"$name\": make kind-cluster KIND_CLUSTER=$name makes one"
kubeconfig=$REPO/.dnsplane/kind-$name.kubeconfig
[ -f "$kubeconfig" ] || die "$kubeconfig is missing: make kind-cluster KIND_CLUSTER=$name writes it"
if [ -z "${TAG:-}" ]; then
  TAG=$(make -s version)
  case $TAG in *-dirty) TAG=$TAG.$(date -u +%Y%m%d%H%M%S) ;; esac
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
kind_images "$work/images.tar" >&2
kind load image-archive "$work/images.tar" --name "$name" >&2
log "loaded $IMG into kind cluster $name"
printf 'KUBECONFIG=%s\nTAG=%s\nNODE_IP=%s\n' "$kubeconfig" "$TAG" "$(kind_node_ip "$name-control-plane")"
