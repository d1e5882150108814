#!/usr/bin/env bash
# e2e-kind.sh runs the end-to-end suite (e2e/, build tag e2e) against kind clusters running the
# release manifests (config/default), for users with kind and Docker. `make e2e-kind` runs it.
#
# NOT RUN IN CI HERE: this machine has no Docker and cannot pull kind's node image, so CI runs
# `make e2e` (the same suite against `bin/manager --local` processes). This script is kept correct
# by construction: it builds the same image users build, applies the same manifests, and hands the
# same suite the clusters through the harness's environment (E2E_KUBECONFIGS, E2E_DNS_ADDRS,
# E2E_PDNS_*, E2E_KILL_CMD, E2E_RESTART_CMD; see e2e/harness_test.go).
#
# What it does:
#   1. builds the manager image ($IMG) with `make docker-build` (or `docker build -t $IMG .` from
#      the repo's Dockerfile when that target does not exist);
#   2. creates $E2E_KIND_CLUSTERS kind clusters (default 3: geo tags eu, us, ap) and loads the image;
#   3. starts one PowerDNS on the host with hack/pdns.sh, listening on the kind network's gateway
#      address, so that both the managers (in pods) and the suite (on the host) reach it;
#   4. applies config/default to each cluster, then patches the manager Deployment with what a
#      multi-cluster user sets per cluster: --owner-id, --geo-tag, --ext-gslb-clusters (the
#      peers' exposed DNS servers), the suite's short heartbeat and Gslb timings, POD_IP for the
#      embedded server's glue, and 1 replica (see below);
#   5. exposes each cluster's embedded DNS server as a NodePort Service (UDP and TCP) on the
#      node's address on the kind network;
#   6. runs `go test -tags e2e ./e2e/` with those clusters, and deletes everything afterwards
#      (E2E_KIND_KEEP=1 keeps the clusters).
#
# Replicas: config/default runs 2 replicas with leader election; every replica serves the zones
# (their truth is in ConfigMaps, pkg/zonestore) and the dns Service selects every ready one. The
# suite's kill and restart commands scale to 1 replica, so it runs 1 replica.
#
# Environment: IMG (default dnsplane/manager:dev), E2E_KIND_CLUSTERS (2 or 3), E2E_KIND_PREFIX
# (default dnsplane-e2e), E2E_KIND_KEEP, E2E_NODE_PORT (default 30053), TEST_ARGS (extra go test
# flags, e.g. "-run TestGslbFailover").
# Needs kind, docker, kubectl (or bin/kubectl), go, and the PowerDNS packages hack/pdns.sh needs.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
REPO=$PWD
IMG=${IMG:-dnsplane/manager:dev}
N=${E2E_KIND_CLUSTERS:-3}
PREFIX=${E2E_KIND_PREFIX:-dnsplane-e2e}
NODE_PORT=${E2E_NODE_PORT:-30053}
NS=dnsplane-system
DEPLOY=dnsplane-controller-manager
GEOS=(eu us ap)

log() { printf 'e2e-kind: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

[[ $N =~ ^[23]$ ]] || die "E2E_KIND_CLUSTERS must be 2 or 3, got $N"
for tool in kind docker go; do
  command -v "$tool" >/dev/null || die "$tool not found"
done
if command -v kubectl >/dev/null; then KUBECTL=$(command -v kubectl)
elif [ -x "$REPO/bin/kubectl" ]; then KUBECTL=$REPO/bin/kubectl
else die "kubectl not found (make envtest-bins builds bin/kubectl)"; fi
export PATH="/usr/sbin:$PATH" # pdns_server

WORK=$(mktemp -d -t dnsplane-e2e-kind-XXXXXX)
PDNS_DIR=$WORK/pdns
cleanup() {
  local rc=$?
  "$REPO/hack/pdns.sh" stop "$PDNS_DIR" || true
  if [ -z "${E2E_KIND_KEEP:-}" ]; then
    for ((i = 0; i < N; i++)); do kind delete cluster --name "$PREFIX-${GEOS[$i]}" >/dev/null 2>&1 || true; done
    rm -rf "$WORK"
  else
    log "kept the clusters ($PREFIX-*) and $WORK"
  fi
  exit $rc
}
trap cleanup EXIT

# 1. The image, as users build it.
if make -n docker-build IMG="$IMG" >/dev/null 2>&1; then
  make docker-build IMG="$IMG"
else
  docker build -t "$IMG" .
fi

# 2. The clusters (kind creates the "kind" Docker network with the first one).
for ((i = 0; i < N; i++)); do
  name=$PREFIX-${GEOS[$i]}
  kind delete cluster --name "$name" >/dev/null 2>&1 || true
  kind create cluster --name "$name" --kubeconfig "$WORK/${GEOS[$i]}.kubeconfig" --wait 120s
  kind load docker-image "$IMG" --name "$name"
done
node_ip() { docker inspect -f '{{with index .NetworkSettings.Networks "kind"}}{{.IPAddress}}{{end}}' "$PREFIX-$1-control-plane"; }
declare -A DNS
for ((i = 0; i < N; i++)); do DNS[${GEOS[$i]}]=$(node_ip "${GEOS[$i]}"):$NODE_PORT; done

# 3. PowerDNS on the host, on the kind network's gateway address (reachable from pods and host).
GW=$(docker network inspect kind -f '{{range .IPAM.Config}}{{.Gateway}} {{end}}' | tr ' ' '\n' | grep -m1 -E '^[0-9]+\.')
SUBNET=$(docker network inspect kind -f '{{range .IPAM.Config}}{{.Subnet}} {{end}}' | tr ' ' '\n' | grep -m1 -E '^[0-9]+\.')
[ -n "$GW" ] && [ -n "$SUBNET" ] || die "cannot read the kind network's IPv4 gateway and subnet"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("",0)); print(s.getsockname()[1])'; }
PDNS_DNS_PORT=$(free_port)
PDNS_API_PORT=$(free_port)
PDNS_KEY=e2e-kind-$RANDOM$RANDOM
PDNS_LOCAL_ADDRESS=$GW PDNS_EXTRA_CONF=$'webserver-address=0.0.0.0\nwebserver-allow-from=127.0.0.0/8,'"$SUBNET" \
  "$REPO/hack/pdns.sh" start "$PDNS_DIR" "$PDNS_DNS_PORT" "$PDNS_API_PORT" "$PDNS_KEY"

# 4. The release manifests, then what a user sets per cluster.
for ((i = 0; i < N; i++)); do
  geo=${GEOS[$i]}
  export KUBECONFIG=$WORK/$geo.kubeconfig
  "$KUBECTL" apply -k config/default
  peers=()
  for ((j = 0; j < N; j++)); do [ "$j" = "$i" ] || peers+=("${GEOS[$j]}=${DNS[${GEOS[$j]}]}"); done
  args=(--owner-id=cluster-$geo --geo-tag=$geo "--ext-gslb-clusters=$(IFS=,; echo "${peers[*]}")"
    --heartbeat-interval=2s --heartbeat-threshold=10s --gslb-interval=1s --gslb-peer-timeout=500ms
    --soa-poll-interval=2s)
  patch='['
  for a in "${args[@]}"; do patch+='{"op":"add","path":"/spec/template/spec/containers/0/args/-","value":"'$a'"},'; done
  patch+='{"op":"add","path":"/spec/template/spec/containers/0/env","value":[{"name":"POD_IP","valueFrom":{"fieldRef":{"fieldPath":"status.podIP"}}},{"name":"POD_NAMESPACE","valueFrom":{"fieldRef":{"fieldPath":"metadata.namespace"}}}]},'
  patch+='{"op":"replace","path":"/spec/replicas","value":1}]'
  "$KUBECTL" -n "$NS" patch deployment "$DEPLOY" --type=json -p "$patch"
  # 5. The embedded DNS server, on the node's address.
  "$KUBECTL" apply -f - <<EOF
apiVersion: v1
kind: Service
metadata: {name: dnsplane-dns, namespace: $NS}
spec:
  type: NodePort
  selector: {control-plane: controller-manager}
  ports:
  - {name: dns-udp, protocol: UDP, port: 5353, targetPort: 5353, nodePort: $NODE_PORT}
  - {name: dns-tcp, protocol: TCP, port: 5353, targetPort: 5353, nodePort: $NODE_PORT}
EOF
  "$KUBECTL" -n "$NS" rollout status deployment "$DEPLOY" --timeout=180s
done
unset KUBECONFIG

# 6. The suite. Kill = SIGKILL the manager pod with no replacement; restart = scale back to 1.
kcs=() addrs=()
for ((i = 0; i < N; i++)); do kcs+=("$WORK/${GEOS[$i]}.kubeconfig"); addrs+=("${DNS[${GEOS[$i]}]}"); done
export E2E_KUBECONFIGS=$(IFS=,; echo "${kcs[*]}")
export E2E_DNS_ADDRS=$(IFS=,; echo "${addrs[*]}")
export E2E_PDNS_API_URL=http://$GW:$PDNS_API_PORT E2E_PDNS_API_KEY=$PDNS_KEY E2E_PDNS_DNS_ADDR=$GW:$PDNS_DNS_PORT
export E2E_KILL_CMD="'$KUBECTL' -n $NS scale deployment $DEPLOY --replicas=0 && '$KUBECTL' -n $NS delete pod -l control-plane=controller-manager --grace-period=0 --force --wait=true"
export E2E_RESTART_CMD="'$KUBECTL' -n $NS scale deployment $DEPLOY --replicas=1 && '$KUBECTL' -n $NS rollout status deployment $DEPLOY --timeout=180s"
# shellcheck disable=SC2086
go test -tags e2e -count=1 -timeout 15m -v ${TEST_ARGS:-} ./e2e/
