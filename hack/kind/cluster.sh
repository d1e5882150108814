#!/usr/bin/env bash
# cluster.sh makes one kind cluster to try dnsplane on (docs/install.md, "Try it on kind"):
# the tools in bin/ (kind, helm, kubectl), the manager image (`make image` with podman, `make
# docker-build` with Docker) and the dnsq image (a dig for Pods, hack/kind/dnsq) loaded into its
# node, and its kubeconfig in .dnsplane/kind-<name>.kubeconfig. With podman it uses a node image
# built here with no registry (hack/kind/node-image.sh); with Docker, kind's stock node image.
# It prints the kubeconfig path, the manager image's tag and the node's address on stdout as
# shell assignments (KUBECONFIG=..., TAG=..., NODE_IP=...).
# Usage: hack/kind/cluster.sh [name, default dnsplane]    (`make kind-cluster`)
# Environment: KIND_EXPERIMENTAL_PROVIDER, KIND_NODE_IMAGE (offline, stock or an image), TAG.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
name=${1:-dnsplane}
log() { printf 'kind-cluster: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
# shellcheck source=lib.sh
source hack/kind/lib.sh
kind_engine
kind_tools >&2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
kind_images "$work/images.tar" >&2
kind_node_image
kind_config "$work/kind.yaml"
mkdir -p .dnsplane
kubeconfig=$REPO/.dnsplane/kind-$name.kubeconfig
kind_cluster "$name" "$kubeconfig" "$work/kind.yaml" "$work/images.tar" >&2
printf 'KUBECONFIG=%s\nTAG=%s\nNODE_IP=%s\n' "$kubeconfig" "$TAG" "$(kind_node_ip "$name-control-plane")"
