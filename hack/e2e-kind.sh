#!/usr/bin/env bash
# e2e-kind.sh runs the end-to-end suite (e2e/, build tag e2e) against kind clusters that run
# dnsplane as users install it: the Helm chart (charts/dnsplane), 2 replicas with leader election,
# the manager image on real Pods. `make e2e-kind` runs it; .ci/run runs it after `make e2e`.
#
# What it does:
#   1. tools: kind (sigs.k8s.io/kind, hack/kind/bins.sh), helm (hack/helm.sh) and kubectl
#      (hack/envtest-bins.sh) into bin/, from the Go module proxy, cached per version;
#   2. the manager image: `make image` (podman, FROM scratch) or `make docker-build` (Docker),
#      tagged $TAG explicitly (the chart's default is its appVersion);
#   3. the node image (KIND_NODE_IMAGE): "offline" builds one with no registry
#      (hack/kind/node-image.sh, cached by content hash); "stock" is kind's default kindest/node;
#      anything else is used as given. Default: offline with podman, stock with Docker;
#   4. $E2E_KIND_CLUSTERS kind clusters (default 3, as make e2e runs 3 managers; geo tags eu, us, ap), the image loaded into each
#      (`kind load image-archive`);
#   5. one PowerDNS on the host (hack/pdns.sh), on the kind network's gateway address, reachable
#      from the Pods and from the suite;
#   6. `helm install` in each cluster with the values a multi-cluster user sets (owner ID, geo tag,
#      Gslb peers = the other clusters' dns Services, a GeoIP database written by
#      hack/kind/geoipdb into ConfigMap geoip) plus the suite's short timings, and the
#      chart's dns Service as a NodePort ($E2E_NODE_PORT) on the node's kind-network address;
#   7. the same suite as `make e2e` (go test -tags e2e ./e2e/), then the kind-only scenarios
#      (e2e/kind_*_test.go: TestKind*, run last and alone, since they delete pods, cut links
#      between the nodes, upgrade and uninstall the release). Clusters are deleted afterwards
#      unless E2E_KIND_KEEP=1.
#
# Replicas: the chart runs 2 replicas with leader election; every replica serves the zones (their
# truth is in ConfigMaps, pkg/zonestore) and the dns Service selects every ready one.
#
# Provider: KIND_EXPERIMENTAL_PROVIDER=podman selects podman (set automatically when no Docker
# engine answers and podman is installed). With podman, the settings this machine needs come from
# hack/podman/containers.conf (runc, ulimits root may set), and /lib/modules is created empty when
# the host lacks it (kind bind-mounts it).
#
# Environment: E2E_KIND_CLUSTERS (2 or 3), E2E_KIND_PREFIX (default dnsplane-e2e), E2E_KIND_KEEP,
# E2E_NODE_PORT (default 30053), KIND_NODE_IMAGE, TEST_ARGS (extra go test flags for the suite,
# e.g. "-run TestGslbFailover"), KIND_TEST_ARGS (for the kind-only scenarios; "-run XXX" skips
# them), E2E_KIND_SKIP_SUITE=1 (only the kind-only scenarios). Figures (times of each phase) are
# printed as "e2e-kind: TIME <phase> <seconds>".
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
N=${E2E_KIND_CLUSTERS:-3}
PREFIX=${E2E_KIND_PREFIX:-dnsplane-e2e}
NODE_PORT=${E2E_NODE_PORT:-30053}
NS=dnsplane-system
RELEASE=dnsplane
GEOS=(eu us ap)

log() { printf 'e2e-kind: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }
phase_start=$SECONDS
timed() { log "TIME $1 $((SECONDS - phase_start))"; phase_start=$SECONDS; }
# shellcheck source=kind/lib.sh
source hack/kind/lib.sh

[[ $N =~ ^[23]$ ]] || die "E2E_KIND_CLUSTERS must be 2 or 3, got $N"
kind_engine

# 1. Tools.
kind_tools
timed tools

WORK=$(mktemp -d -t dnsplane-e2e-kind-XXXXXX)
PDNS_DIR=$WORK/pdns
cleanup() {
  local rc=$?
  "$REPO/hack/pdns.sh" stop "$PDNS_DIR" >/dev/null 2>&1 || true
  if [ -z "${E2E_KIND_KEEP:-}" ]; then
    for ((i = 0; i < N; i++)); do kind delete cluster --name "$PREFIX-${GEOS[$i]}" >/dev/null 2>&1 || true; done
    rm -rf "$WORK"
  else
    log "kept the clusters ($PREFIX-*) and $WORK"
  fi
  exit $rc
}
trap cleanup EXIT

# 2. The manager image, with an explicit tag, and dnsq.
kind_images "$WORK/images.tar"
timed images

# 3. The node image.
kind_node_image
timed node-image

# 4. The clusters.
kind_config "$WORK/kind.yaml"
for ((i = 0; i < N; i++)); do
  kind_cluster "$PREFIX-${GEOS[$i]}" "$WORK/${GEOS[$i]}.kubeconfig" "$WORK/kind.yaml" "$WORK/images.tar"
done
timed clusters
declare -A DNS
for ((i = 0; i < N; i++)); do DNS[${GEOS[$i]}]=$(kind_node_ip "$PREFIX-${GEOS[$i]}-control-plane"):$NODE_PORT; done

# 5. PowerDNS on the host, on the kind network's gateway address.
if [ "$CE" = podman ]; then
  net=$(podman network inspect kind -f '{{range .Subnets}}{{.Gateway}} {{.Subnet}}{{"\n"}}{{end}}' | grep -m1 -E '^[0-9]+\.')
else
  net=$(docker network inspect kind -f '{{range .IPAM.Config}}{{.Gateway}} {{.Subnet}}{{"\n"}}{{end}}' | grep -m1 -E '^[0-9]+\.')
fi
read -r GW SUBNET <<<"$net"
if [ -z "${GW:-}" ] || [ -z "${SUBNET:-}" ]; then
  die "cannot read the kind network's IPv4 gateway and subnet"
fi
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])'; }
PDNS_DNS_PORT=$(free_port)
PDNS_API_PORT=$(free_port)
PDNS_KEY=e2e-kind-$RANDOM$RANDOM
PDNS_LOCAL_ADDRESS=$GW PDNS_EXTRA_CONF=$'webserver-address=0.0.0.0\nwebserver-allow-from=127.0.0.0/8,'"$SUBNET"$'\nallow-axfr-ips=127.0.0.0/8,'"$SUBNET" \
  "$REPO/hack/pdns.sh" start "$PDNS_DIR" "$PDNS_DNS_PORT" "$PDNS_API_PORT" "$PDNS_KEY"

# 6. The chart in each cluster. values-<geo>.yaml is what a user would write for that cluster.
# The GeoIP database of geo Gslbs (e2e/kind_geo_test.go, docs/install.md "A geo Gslb on kind"):
# a small mmdb (hack/kind/geoipdb) in ConfigMap geoip of the release namespace, mounted through
# gslb.geoip. The kind network and the Pod network are in Germany, so that a query without ECS
# from the host (its source the gateway, or a node or bridge address after kube-proxy's SNAT)
# is located there; the other networks are documentation prefixes that ECS names.
GEOIP_NETS="198.51.100.0/24=DE/EU 203.0.113.0/24=CA/NA 192.0.2.0/24=JP/AS 10.244.0.0/16=DE/EU $SUBNET=DE/EU"
# shellcheck disable=SC2086
go run ./hack/kind/geoipdb -o "$WORK/geo.mmdb" $GEOIP_NETS
values() { # values <i>
  local geo=${GEOS[$1]} j
  cat <<EOF
replicaCount: 2
image: {repository: $IMAGE_REPO, tag: "$TAG", pullPolicy: Never}
ownerID: cluster-$geo
geoTag: $geo
gslb:
  interval: 1s
  peerTimeout: 500ms
  peers:
EOF
  for ((j = 0; j < N; j++)); do
    [ "$j" = "$1" ] || printf '  - {geoTag: %s, address: "%s"}\n' "${GEOS[$j]}" "${DNS[${GEOS[$j]}]}"
  done
  cat <<EOF
  geoip: {volume: {configMap: {name: geoip}}, file: geo.mmdb}
dns:
  service: {type: NodePort, nodePort: $NODE_PORT}
extraArgs: [--heartbeat-interval=2s, --heartbeat-threshold=10s, --soa-poll-interval=2s, "--local-allow-transfer=$SUBNET,10.244.0.0/16"]
EOF
}
for ((i = 0; i < N; i++)); do
  geo=${GEOS[$i]}
  values "$i" >"$WORK/values-$geo.yaml"
  "$KUBECTL" --kubeconfig "$WORK/$geo.kubeconfig" create namespace "$NS"
  "$KUBECTL" --kubeconfig "$WORK/$geo.kubeconfig" -n "$NS" create configmap geoip --from-file=geo.mmdb="$WORK/geo.mmdb"
  helm --kubeconfig "$WORK/$geo.kubeconfig" install "$RELEASE" charts/dnsplane -n "$NS" --create-namespace \
    -f "$WORK/values-$geo.yaml" --wait --timeout 300s
done
for ((i = 0; i < N; i++)); do
  KUBECONFIG=$WORK/${GEOS[$i]}.kubeconfig hack/kind/wait-leader.sh "$NS" "$RELEASE"
done
timed helm-install

# 7. The suite. Kill = no manager left (scale to 0, SIGKILL the pods); restart = back to 2 replicas
# and a leader serving the dns Service.
kcs=() addrs=()
for ((i = 0; i < N; i++)); do kcs+=("$WORK/${GEOS[$i]}.kubeconfig"); addrs+=("${DNS[${GEOS[$i]}]}"); done
E2E_KUBECONFIGS=$(IFS=,; echo "${kcs[*]}")
E2E_DNS_ADDRS=$(IFS=,; echo "${addrs[*]}")
export E2E_KUBECONFIGS E2E_DNS_ADDRS
export E2E_PDNS_API_URL=http://$GW:$PDNS_API_PORT E2E_PDNS_API_KEY=$PDNS_KEY E2E_PDNS_DNS_ADDR=$GW:$PDNS_DNS_PORT
export E2E_KILL_CMD="'$KUBECTL' -n $NS scale deployment $RELEASE --replicas=0 && '$KUBECTL' -n $NS delete pod -l app.kubernetes.io/instance=$RELEASE --grace-period=0 --force --wait=true"
export E2E_RESTART_CMD="'$KUBECTL' -n $NS scale deployment $RELEASE --replicas=2 && '$KUBECTL' -n $NS rollout status deployment $RELEASE --timeout=180s && '$REPO/hack/kind/wait-leader.sh' $NS $RELEASE"
# What the kind-only scenarios need (e2e/kind_test.go).
export E2E_KIND=1 E2E_KIND_NAMESPACE=$NS E2E_KIND_RELEASE=$RELEASE E2E_KIND_CHART=$REPO/charts/dnsplane
export E2E_KIND_HELM=$BIN/helm E2E_KIND_KUBECTL=$KUBECTL E2E_KIND_VALUES_DIR=$WORK E2E_KIND_TAG=$TAG
export E2E_KIND_PDNS_LISTEN=$GW E2E_KIND_GEOIP_NETS=$GEOIP_NETS
# The node containers, one per cluster in the order of E2E_KUBECONFIGS, and the engine that runs
# them: the health scenarios (e2e/kind_health_test.go) cut links between clusters with
# `$E2E_KIND_ENGINE exec <node> iptables`.
nodes=()
for ((i = 0; i < N; i++)); do nodes+=("$PREFIX-${GEOS[$i]}-control-plane"); done
E2E_KIND_NODES=$(IFS=,; echo "${nodes[*]}")
export E2E_KIND_NODES E2E_KIND_ENGINE=$CE
# E2E_KIND_RETAG_CMD makes the image $IMAGE_REPO:$E2E_NEW_TAG (the same image, another tag)
# present on cluster $E2E_GEO's node.
export E2E_KIND_RETAG_CMD="$CE tag '$IMG' \"docker.io/$IMAGE_REPO:\$E2E_NEW_TAG\" && $CE save -o '$WORK/retag.tar' \"docker.io/$IMAGE_REPO:\$E2E_NEW_TAG\" && '$BIN/kind' load image-archive '$WORK/retag.tar' --name '$PREFIX'-\$E2E_GEO"
if [ -z "${E2E_KIND_SKIP_SUITE:-}" ]; then
  # shellcheck disable=SC2086
  go test -tags e2e -count=1 -timeout 30m -v -skip '^TestKind' ${TEST_ARGS:-} ./e2e/
  timed suite
fi
# shellcheck disable=SC2086
go test -tags e2e -count=1 -timeout 20m -v -run '^TestKind' ${KIND_TEST_ARGS:-} ./e2e/
timed kind-scenarios
