#!/usr/bin/env bash
# wait-leader.sh waits until the chart's dns Service has a ready endpoint: a manager pod is ready
# and (with leader election) the leader has labelled its pod, so the embedded server answers
# through the Service. KUBECONFIG selects the cluster.
# Usage: hack/kind/wait-leader.sh <namespace> <release> [timeout-seconds, default 180]
set -euo pipefail
ns=$1 release=$2 timeout=${3:-180}
kubectl=$(command -v kubectl || echo "$(dirname "$0")/../../bin/kubectl")
deadline=$((SECONDS + timeout))
while :; do
  ready=$("$kubectl" -n "$ns" get endpointslices -l "kubernetes.io/service-name=$release-dns" \
    -o jsonpath='{range .items[*].endpoints[?(@.conditions.ready==true)]}{.addresses[0]}{" "}{end}' 2>/dev/null || true)
  [ -n "${ready// /}" ] && { echo "wait-leader: $ns/$release-dns serves from $ready" >&2; exit 0; }
  [ $SECONDS -lt $deadline ] || { echo "wait-leader: no ready endpoint behind $ns/$release-dns after ${timeout}s" >&2; exit 1; }
  sleep 1
done
