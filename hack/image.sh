#!/usr/bin/env bash
# image.sh builds the manager image with podman FROM scratch (Containerfile.scratch) from a
# host-built static binary: no base image is pulled, so it works with no registry. `make image`
# runs it after `make build`. The image is tagged $IMG and $IMAGE_REPO:dev (config/default's tag)
# and labelled with the OCI version, revision and licence.
#
# Usage: hack/image.sh [manager-binary]   (default bin/manager)
# Environment: IMG (default $IMAGE_REPO:$VERSION), IMAGE_REPO (default dnsplane/manager), VERSION
# and REVISION (default: the Makefile's), CA_BUNDLE (default /etc/ssl/certs/ca-certificates.crt,
# the host's, for the cloud providers' HTTPS APIs), CONTAINERS_CONF (default
# hack/podman/containers.conf). Needs podman and runc (Debian packages), run as root or via sudo.
set -euo pipefail
PROG=image
source "$(dirname "${BASH_SOURCE[0]}")/lib/podman.sh"

bin=${1:-$REPO/bin/manager}
ca=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
[ -x "$bin" ] || die "$bin is not an executable: run make build"
[ -s "$ca" ] || die "no CA bundle at $ca (Debian: apt-get install ca-certificates)"
# FROM scratch has no libc: the binary must be static (make build sets CGO_ENABLED=0).
go version -m "$bin" | grep -q 'CGO_ENABLED=0' || die "$bin was not built with CGO_ENABLED=0: run make build"

# The build context: only what the image holds (bin/ is in .dockerignore, and the CA bundle lives
# outside the repository).
ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
cp "$bin" "$ctx/manager"
chmod 0755 "$ctx/manager"
root=$ctx/rootfs
mkdir -p "$root/etc/ssl/certs" "$root/tmp" "$root/home/nonroot"
cp "$ca" "$root/etc/ssl/certs/ca-certificates.crt"
chmod 0644 "$root/etc/ssl/certs/ca-certificates.crt"
chmod 1777 "$root/tmp"
chmod 0700 "$root/home/nonroot"
# Owners are set in the archive, so that no chown (and no root) is needed for the staging files.
tar -C "$root" --numeric-owner --owner=0 --group=0 -cf "$ctx/rootfs.tar" --exclude=./home/nonroot .
tar -C "$root" --numeric-owner --owner=65532 --group=65532 --no-recursion -rf "$ctx/rootfs.tar" ./home/nonroot
rm -rf "$root"

log "building $IMG and $IMAGE_REPO:dev from $bin ($VERSION, revision $REVISION)"
podman build --no-cache --quiet -f "$REPO/Containerfile.scratch" \
  --build-arg VERSION="$VERSION" --build-arg REVISION="$REVISION" \
  -t "$IMG" -t "$IMAGE_REPO:dev" "$ctx" >/dev/null
log "built $IMG ($(podman image inspect -f '{{.Id}}' "$IMG" | cut -c1-12))"
