#!/usr/bin/env bash
# scale.sh measures the managed-DNS flow at scale with the real manager binary on a local control
# plane: ZONES DNSZones and OBJECTS DNSEndpoints of ENDPOINTS endpoints each (embedded provider),
# all applied at once. It prints the wall time until every DNSEndpoint is Ready, the provider
# calls by operation (dnsplane_provider_requests_total), and the manager's peak RSS (VmHWM).
# With PPROF=1 the manager serves /debug/pprof/ on loopback (--pprof-bind-address) and the script
# prints its goroutines and heap in use after a forced GC, once every object is Ready and again
# after SETTLE seconds idle (default 10), and saves the profiles in PPROF_DIR (default
# hack/scale-out/, git-ignored).
# Usage: hack/scale.sh   (env: ZONES=10 OBJECTS=1000 ENDPOINTS=10 DNS_PORT=5370 PPROF= SETTLE=10)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ZONES=${ZONES:-10} OBJECTS=${OBJECTS:-1000} ENDPOINTS=${ENDPOINTS:-10} DNS_PORT=${DNS_PORT:-5370}
dir=$(mktemp -d "${TMPDIR:-/tmp}/dnsplane-scale.XXXXXX")
metrics=127.0.0.1:$((DNS_PORT + 10000)) health=127.0.0.1:$((DNS_PORT + 10001)) pprof=127.0.0.1:$((DNS_PORT + 10002))
pprof_args=()
if [[ -n "${PPROF:-}" ]]; then pprof_args=(--pprof-bind-address "$pprof"); fi
export KUBECONFIG=$dir/kubeconfig PATH=$root/bin:$PATH
cd "$root"
make -s build envtest-bins >/dev/null
"$root/bin/manager" --local --local-dir "$dir" --local-dns-addr "127.0.0.1:$DNS_PORT" \
  --metrics-bind-address "$metrics" --health-probe-bind-address "$health" "${pprof_args[@]}" >"$dir/manager.log" 2>&1 &
pid=$!
trap 'kill -INT $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
until curl -sf "http://$health/readyz" >/dev/null; do
  kill -0 $pid 2>/dev/null || { tail -20 "$dir/manager.log"; exit 1; }
  sleep 0.2
done

{
  printf 'apiVersion: v1\nkind: Secret\nmetadata: {name: dns}\ntype: dnsplane.io/local\n'
  for z in $(seq 0 $((ZONES - 1))); do
    printf -- '---\napiVersion: dnsplane.io/v1alpha1\nkind: DNSZone\nmetadata: {name: z%d}\nspec: {zone: z%d.scale.test, providerRef: {name: dns}}\n' "$z" "$z"
  done
} | kubectl apply -f - >/dev/null
kubectl wait --for=condition=Ready dnszone --all --timeout=120s >/dev/null

gen() {
  for i in $(seq 0 $((OBJECTS - 1))); do
    printf -- '---\napiVersion: dnsplane.io/v1alpha1\nkind: DNSEndpoint\nmetadata: {name: app%d}\nspec:\n  endpoints:\n' "$i"
    for j in $(seq 0 $((ENDPOINTS - 1))); do
      printf '  - {dnsName: h%d-%d.z%d.scale.test, recordType: A, targets: [10.%d.%d.%d]}\n' "$i" "$j" $((i % ZONES)) $((i / 250)) $((i % 250)) "$j"
    done
  done
}
gen >"$dir/endpoints.yaml"
start=$(date +%s.%N)
kubectl apply --server-side -f "$dir/endpoints.yaml" >/dev/null
applied=$(date +%s.%N)
kubectl wait --for=condition=Ready dnsendpoint --all --timeout=600s >/dev/null
done_at=$(date +%s.%N)
last="h$((OBJECTS - 1))-$((ENDPOINTS - 1)).z$(((OBJECTS - 1) % ZONES)).scale.test"
answer=$(dig @127.0.0.1 -p "$DNS_PORT" "$last" A +short)
printf 'objects %d x %d endpoints over %d zones\n' "$OBJECTS" "$ENDPOINTS" "$ZONES"
printf 'kubectl apply: %.1fs; apply to all Ready: %.1fs; %s -> %s\n' \
  "$(echo "$applied - $start" | bc)" "$(echo "$done_at - $start" | bc)" "$last" "$answer"
curl -s "http://$metrics/metrics" | grep '^dnsplane_provider_requests_total' | sed 's/^/  /'
grep VmHWM "/proc/$pid/status" | sed 's/^/manager peak RSS: /'

# profile <label>: goroutines and heap in use (after a GC), and the profiles saved under PPROF_DIR.
profile() {
  local out=${PPROF_DIR:-$root/hack/scale-out}
  mkdir -p "$out"
  curl -s "http://$pprof/debug/pprof/goroutine?debug=1" >"$out/goroutine-$1.txt"
  curl -s "http://$pprof/debug/pprof/heap?gc=1" >"$out/heap-$1.pb.gz"
  printf '%s: %s; heap in use %s MiB\n' "$1" "$(head -1 "$out/goroutine-$1.txt")" \
    "$(curl -s "http://$pprof/debug/pprof/heap?debug=1&gc=1" | awk '/^# HeapInuse = /{printf "%.1f", $4/1048576}')"
}
if [[ -n "${PPROF:-}" ]]; then
  profile ready
  sleep "${SETTLE:-10}"
  profile idle
fi
