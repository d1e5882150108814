# shellcheck shell=bash
# podman.sh: what hack/image.sh and hack/image-check.sh share. Source it after setting PROG (the
# script's name, for messages). It sets REPO, the podman settings this machine needs
# (CONTAINERS_CONF, unless the caller set one), and the image names.

log() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { log "$*"; exit 1; }

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
# runc as the runtime, ulimits root may set, cgroupfs, file events (hack/podman/containers.conf;
# ../shared/design/kind-offline.md): set here, never on the machine, so a clean CI host works.
export CONTAINERS_CONF=${CONTAINERS_CONF:-$REPO/hack/podman/containers.conf}
IMAGE_REPO=${IMAGE_REPO:-dnsplane/manager}
VERSION=${VERSION:-$(make -s -C "$REPO" version)}
REVISION=${REVISION:-$(git -C "$REPO" rev-parse --short HEAD 2>/dev/null || echo unknown)}
IMG=${IMG:-$IMAGE_REPO:$VERSION}

# podman runs as root (rootful storage, no user namespace: the uid inside is the uid on the host).
podman() {
  command -v podman >/dev/null || die "podman is not installed (Debian: apt-get install podman runc)"
  if [ "$(id -u)" -eq 0 ]; then
    command podman "$@"
  else
    sudo env CONTAINERS_CONF="$CONTAINERS_CONF" podman "$@"
  fi
}
