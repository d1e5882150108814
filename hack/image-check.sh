#!/usr/bin/env bash
# image-check.sh builds the FROM-scratch manager image (hack/image.sh) and checks it as a pod would
# run it: `--version` inside prints what the host binary prints; the image runs as 65532:65532 with
# entrypoint /manager and holds no /etc/passwd; and the manager starts in it the way
# config/manager's Deployment runs it (read-only root filesystem, every capability dropped, no
# privilege escalation, an empty writable directory at each of the Deployment's volume
# mountPaths), as uid and gid 65532, up to the point where it needs the API server (the container
# has no network, so it stops there). `make image-check` runs it; .ci/run through `make test`.
#
# Usage: hack/image-check.sh [manager-binary]   (default bin/manager)
# Environment: as hack/image.sh (IMG, IMAGE_REPO, VERSION, REVISION, CONTAINERS_CONF).
set -euo pipefail
PROG=image-check
source "$(dirname "${BASH_SOURCE[0]}")/lib/podman.sh"

bin=${1:-$REPO/bin/manager}
"$REPO/hack/image.sh" "$bin"

work=$(mktemp -d)
cid=""
cleanup() {
  [ -z "$cid" ] || podman rm -f "$cid" >/dev/null 2>&1 || true
  # The container wrote files owned by 65532 into the volumes: remove them as the root podman is.
  if [ "$(id -u)" -eq 0 ]; then rm -rf "$work"; else sudo rm -rf "$work"; fi
}
trap cleanup EXIT

# 1. The same version as the host binary, printed by the image's entrypoint.
want=$("$bin" --version)
got=$(podman run --rm --network=none "$IMG" --version)
[ "$got" = "$want" ] || die "--version in $IMG printed \"$got\", bin/manager prints \"$want\""
log "--version: $got"

# 2. The image's user and entrypoint (the Dockerfile's), and no passwd file.
user=$(podman image inspect -f '{{.Config.User}}' "$IMG")
entry=$(podman image inspect -f '{{json .Config.Entrypoint}}' "$IMG")
[ "$user" = "65532:65532" ] || die "$IMG runs as \"$user\", want 65532:65532"
[ "$entry" = '["/manager"]' ] || die "$IMG's entrypoint is $entry, want [\"/manager\"]"
podman create --name "image-check-$$" "$IMG" >/dev/null
cid=image-check-$$
podman export "$cid" | tar -t >"$work/files"
podman rm "$cid" >/dev/null
cid=""
for f in manager etc/ssl/certs/ca-certificates.crt tmp/ home/nonroot/; do
  grep -qx "$f" "$work/files" || die "$IMG holds no /$f"
done
! grep -qx 'etc/passwd' "$work/files" || die "$IMG holds /etc/passwd; the manager must run without one"

# 3. The manager starts as the Deployment runs it. Each volume of config/manager/manager.yaml is an
# empty 0777 directory, as an emptyDir is; the API server is unreachable (no network).
manifest=$REPO/config/manager/manager.yaml
mounts=()
while read -r path; do
  dir=$work/volumes$path
  mkdir -p "$dir"
  chmod 0777 "$dir"
  mounts+=(-v "$dir:$path")
done < <(sed -n 's/.*mountPath: *\([^,} ]*\).*/\1/p' "$manifest")
[ ${#mounts[@]} -gt 0 ] || die "no volumeMounts found in $manifest"
cat >"$work/kubeconfig" <<'KUBECONFIG'
apiVersion: v1
kind: Config
clusters: [{name: none, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: none, user: {token: image-check}}]
contexts: [{name: none, context: {cluster: none, user: none}}]
current-context: none
KUBECONFIG
chmod 0644 "$work/kubeconfig"
set +e
out=$(podman run --rm --network=none --read-only --read-only-tmpfs=false --cap-drop=ALL \
  --security-opt=no-new-privileges "${mounts[@]}" -v "$work/kubeconfig:/etc/dnsplane/kubeconfig:ro" \
  -e KUBECONFIG=/etc/dnsplane/kubeconfig "$IMG" \
  --owner-id=image-check --local-dir=/var/lib/dnsplane --local-dns-addr=0.0.0.0:5353 \
  --metrics-bind-address=:8080 --health-probe-bind-address=:8081 2>&1)
rc=$?
set -e
# The manager got as far as asking the API server, after its embedded DNS server's zone store was
# made in the data volume: it ran, under the read-only root, with the Deployment's volumes.
if [ "$rc" -ne 1 ] || ! grep -q '127.0.0.1:1.*connection refused' <<<"$out"; then
  die "the manager in $IMG (exit $rc) did not start as config/manager runs it: $(head -c 2000 <<<"$out")"
fi
owner=$(stat -c '%u:%g' "$work/volumes/var/lib/dnsplane/zones" 2>/dev/null) ||
  die "the manager made no zone store in /var/lib/dnsplane: $(head -c 2000 <<<"$out")"
[ "$owner" = "65532:65532" ] || die "the manager in $IMG ran as $owner, want 65532:65532"
log "the manager ran as $owner with a read-only root and config/manager's volumes, then stopped at the API server as expected"
log "ok: $IMG"
