#!/usr/bin/env bash
# bench-dns.sh compares the query throughput of the embedded authoritative server (pkg/dnsserver,
# served by hack/dnsbench) with PowerDNS Authoritative (gsqlite3, all caches off, hack/pdns.sh) on
# the same zone and the same dnsperf query mix, one server after the other.
#
# It generates bench.test: SOA, NS, 1,000 A names (h1..h1000), a 3-record A set, 10 AAAA, 10 TXT
# and 10 CNAME names; and a dnsperf query file: 80% A queries for existing names (some through a
# CNAME), 10% NODATA (AAAA/TXT of A-only names) and 10% NXDOMAIN. The SOA in the file is the one the
# embedded store serves (CreateZone defaults, serial 2 after the one load update), so both servers
# answer byte-for-byte alike apart from the record order and EDNS details; dig checks that on a few
# names before the runs. It prints each server's queries per second, CPU use during the run, and
# the ratio embedded / PowerDNS.
#
# CPU figures are per cent of one core over the run (a 2-CPU machine has 200%); "other processes"
# is whatever else ran meanwhile, a measure of the noise on a shared machine.
#
# Usage: hack/bench-dns.sh
# Environment (defaults):
#   BENCH_SECONDS=5       dnsperf -l
#   BENCH_CLIENTS=10      dnsperf -c (the same for both servers; no -Q limit)
#   BENCH_THREADS=        dnsperf -T when set (dnsperf's default otherwise)
#   BENCH_QUERIES=10000   lines in the query file (dnsperf loops over it)
#   BENCH_PIN=            "1": pin each server to CPU 1 and dnsperf to CPU 0 (taskset), so the load
#                         generator does not compete with the server for cores
#   BENCH_EMBEDDED_IP=127.0.0.21, BENCH_PDNS_IP=127.0.0.22   listen addresses (ports are free ones)
#   DNSBENCH_BIN=         a prebuilt hack/dnsbench binary (else built into the temp dir)
#   BENCH_KEEP=           "1": keep the temp dir (zone, query file, logs)
#   BENCH_IGNORE_DIFF=    "1": run even when the dig check finds different answers
# Needs: go, pdns-server, pdns-backend-sqlite3, sqlite3, bind9-dnsutils (dig), dnsperf, curl, ss.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

SECONDS_RUN=${BENCH_SECONDS:-5}
CLIENTS=${BENCH_CLIENTS:-10}
NQUERIES=${BENCH_QUERIES:-10000}
EMB_IP=${BENCH_EMBEDDED_IP:-127.0.0.21}
PDNS_IP=${BENCH_PDNS_IP:-127.0.0.22}
ZONE=bench.test
PDNS_KEY=bench-key

log() { printf 'bench-dns: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

for c in go pdns_server pdnsutil sqlite3 dig dnsperf curl ss; do
  command -v "$c" >/dev/null || die "$c not found (apt-get install -y pdns-server pdns-backend-sqlite3 sqlite3 bind9-dnsutils dnsperf curl iproute2)"
done
if [ "${BENCH_PIN:-}" = 1 ]; then
  command -v taskset >/dev/null || die "taskset not found"
  [ "$(nproc)" -ge 2 ] || die "BENCH_PIN=1 needs 2 CPUs"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/dnsplane-bench.XXXXXX")
emb_pid=
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  if [ -n "$emb_pid" ] && kill -0 "$emb_pid" 2>/dev/null; then
    kill -TERM "$emb_pid" 2>/dev/null || true
    wait "$emb_pid" 2>/dev/null || true
  fi
  "$root/hack/pdns.sh" stop "$tmp/pdns" || true
  if [ "${BENCH_KEEP:-}" = 1 ]; then
    log "kept $tmp"
  else
    rm -rf "$tmp"
  fi
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# free_port: a port no local UDP or TCP socket uses (so both protocols can bind it).
free_port() {
  local p
  for _ in $(seq 100); do
    p=$((20000 + RANDOM % 40000))
    if [ -z "$(ss -Hantu "( sport = :$p )" 2>/dev/null)" ]; then
      echo "$p"
      return
    fi
  done
  die "no free port found"
}

# --- zone and queries ------------------------------------------------------------------------
zonefile=$tmp/$ZONE.zone
queries=$tmp/queries.txt
awk -v zone="$ZONE" 'BEGIN {
  printf "$ORIGIN %s.\n$TTL 300\n", zone
  # The SOA and NS the embedded store serves (CreateZone defaults, serial 1 + one update).
  printf "@ 3600 IN SOA ns1.%s. hostmaster.%s. 2 3600 600 1209600 60\n", zone, zone
  printf "@ 3600 IN NS ns1.%s.\n", zone
  print "ns1 3600 IN A 192.0.2.53"
  for (i = 1; i <= 1000; i++) printf "h%d IN A 10.0.%d.%d\n", i, int(i / 256), i % 256
  print "multi IN A 192.0.2.1\nmulti IN A 192.0.2.2\nmulti IN A 192.0.2.3"
  for (i = 1; i <= 10; i++) printf "v%d IN AAAA 2001:db8::%x\n", i, i
  for (i = 1; i <= 10; i++) printf "t%d IN TXT \"bench text record %d\"\n", i, i
  for (i = 1; i <= 10; i++) printf "c%d IN CNAME h%d\n", i, i * 97
}' >"$zonefile"

awk -v zone="$ZONE" -v n="$NQUERIES" 'BEGIN {
  srand(42)
  for (i = 0; i < n; i++) {
    b = i % 10
    if (b < 8) {                       # existing: mostly h*, some CNAME and the 3-record set
      r = int(rand() * 1020)
      if (r < 1000) name = "h" (r + 1); else if (r < 1010) name = "c" (r - 999); else name = "multi"
      printf "%s.%s A\n", name, zone
    } else if (b == 8) {               # NODATA: the name exists, the type does not
      printf "h%d.%s %s\n", int(rand() * 1000) + 1, zone, (rand() < 0.5 ? "AAAA" : "TXT")
    } else {                           # NXDOMAIN
      printf "nx%d.%s A\n", int(rand() * 100000), zone
    }
  }
}' >"$queries"
log "zone: $(grep -vc '^\$' "$zonefile") records; queries: $(wc -l <"$queries") (80% A / 10% NODATA / 10% NXDOMAIN)"

pin_server=() pin_client=()
if [ "${BENCH_PIN:-}" = 1 ]; then
  pin_server=(taskset -c 1) pin_client=(taskset -c 0)
fi

# --- embedded server ---------------------------------------------------------------------------
bin=${DNSBENCH_BIN:-}
if [ -z "$bin" ]; then
  bin=$tmp/dnsbench
  log "building hack/dnsbench"
  go build -o "$bin" ./hack/dnsbench
fi
emb_port=$(free_port)
"${pin_server[@]}" "$bin" -addr "$EMB_IP:$emb_port" -zone "$ZONE" -file "$zonefile" \
  >"$tmp/dnsbench.out" 2>"$tmp/dnsbench.log" &
emb_pid=$!
for _ in $(seq 100); do
  grep -qx ready "$tmp/dnsbench.out" 2>/dev/null && break
  kill -0 "$emb_pid" 2>/dev/null || { cat "$tmp/dnsbench.log" >&2; die "dnsbench exited"; }
  sleep 0.1
done
grep -qx ready "$tmp/dnsbench.out" || { cat "$tmp/dnsbench.log" >&2; die "dnsbench not ready after 10s"; }
sed 's/^/  /' "$tmp/dnsbench.log" >&2

# --- PowerDNS ----------------------------------------------------------------------------------
pdns_port=$(free_port)
api_port=$(free_port)
if [ ${#pin_server[@]} -gt 0 ]; then
  # pdns.sh starts pdns_server as its child: pinning the script pins the server.
  PDNS_LOCAL_ADDRESS=$PDNS_IP "${pin_server[@]}" "$root/hack/pdns.sh" start "$tmp/pdns" "$pdns_port" "$api_port" "$PDNS_KEY"
else
  PDNS_LOCAL_ADDRESS=$PDNS_IP "$root/hack/pdns.sh" start "$tmp/pdns" "$pdns_port" "$api_port" "$PDNS_KEY"
fi
pdns_pid=$(cat "$tmp/pdns/pdns.pid")
pdnsutil --config-dir="$tmp/pdns" load-zone "$ZONE" "$zonefile" >"$tmp/pdnsutil.log" 2>&1 ||
  { cat "$tmp/pdnsutil.log" >&2; die "pdnsutil load-zone failed"; }

# --- same answers? -----------------------------------------------------------------------------
# probe <ip> <port> <name> <type>: rcode, flags and the sorted answer/authority/additional records
# (the embedded server rotates multi-record answers; EDNS details are left out).
probe() {
  dig @"$1" -p "$2" +norecurse +noall +comments +answer +authority +additional +time=2 +tries=1 "$3" "$4" |
    awk '/->>HEADER<<-/ { sub(/.*status: /, ""); sub(/,.*/, ""); print "status " $0; next }
         /^;; flags:/   { sub(/^;; flags: /, ""); sub(/;.*/, ""); print "flags " $0; next }
         /^;/ || NF == 0 { next }
         { $1 = $1; print }' | sort
}
checks=("$ZONE SOA" "$ZONE NS" "ns1.$ZONE A" "h1.$ZONE A" "h1000.$ZONE A" "multi.$ZONE A"
  "c3.$ZONE A" "c3.$ZONE CNAME" "v7.$ZONE AAAA" "t5.$ZONE TXT" "h42.$ZONE AAAA" "H42.$ZONE TXT"
  "nx1.$ZONE A" "deep.nx1.$ZONE AAAA" "example.org A")
diffs=0
for q in "${checks[@]}"; do
  read -r name type <<<"$q"
  a=$(probe "$EMB_IP" "$emb_port" "$name" "$type")
  b=$(probe "$PDNS_IP" "$pdns_port" "$name" "$type")
  if [ "$a" = "$b" ]; then
    printf '  same  %-26s %s\n' "$q" "$(grep '^status' <<<"$a")"
  else
    diffs=$((diffs + 1))
    printf '  DIFF  %s\n' "$q"
    diff <(echo "$a") <(echo "$b") | sed 's/^</    embedded:/; s/^>/    powerdns:/' | grep -v '^[0-9]' || true
  fi
done
if [ "$diffs" -gt 0 ]; then
  [ "${BENCH_IGNORE_DIFF:-}" = 1 ] || die "$diffs of ${#checks[@]} answers differ (BENCH_IGNORE_DIFF=1 to run anyway)"
  log "$diffs answers differ; running anyway"
fi

# --- dnsperf -----------------------------------------------------------------------------------
clk=$(getconf CLK_TCK)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
busy_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat; }

# bench <label> <ip> <port> <server pid>: runs dnsperf, sets QPS and prints a summary line.
QPS=
bench() {
  local label=$1 ip=$2 port=$3 pid=$4 out=$tmp/dnsperf-$1.txt t0 t1 b0 b1 start end
  local args=(-s "$ip" -p "$port" -d "$queries" -l "$SECONDS_RUN" -c "$CLIENTS")
  [ -n "${BENCH_THREADS:-}" ] && args+=(-T "$BENCH_THREADS")
  log "dnsperf ${args[*]}  -> $label"
  t0=$(cpu_ticks "$pid")
  b0=$(busy_ticks)
  start=$(date +%s.%N)
  local TIMEFORMAT='%U %S %R'
  { time "${pin_client[@]}" dnsperf "${args[@]}" >"$out" 2>"$out.err"; } 2>"$out.time" ||
    { cat "$out" "$out.err" >&2; die "dnsperf against $label failed"; }
  end=$(date +%s.%N)
  t1=$(cpu_ticks "$pid")
  b1=$(busy_ticks)
  QPS=$(awk '/Queries per second:/ { print $4 }' "$out")
  [ -n "$QPS" ] || { cat "$out" >&2; die "no qps in dnsperf output"; }
  local lost codes server_cpu client_cpu other_cpu
  lost=$(awk '/Queries lost:/ { print $3, $4 }' "$out")
  codes=$(sed -n 's/^ *Response codes: *//p' "$out")
  server_cpu=$(awk -v d="$((t1 - t0))" -v hz="$clk" -v s="$start" -v e="$end" 'BEGIN { printf "%.0f%%", 100 * d / hz / (e - s) }')
  client_cpu=$(awk '{ printf "%.0f%%", 100 * ($1 + $2) / $3 }' "$out.time")
  # Everything else the machine ran meanwhile (other jobs on a shared box), of $(nproc)00%.
  other_cpu=$(awk -v b="$((b1 - b0))" -v t="$((t1 - t0))" -v hz="$clk" -v s="$start" -v e="$end" '
    { o = (b - t) / hz - ($1 + $2); if (o < 0) o = 0; printf "%.0f%%", 100 * o / (e - s) }' "$out.time")
  printf '%-9s %8.0f qps  lost %s  CPU: server %s, dnsperf %s, other processes %s  (%s)\n' \
    "$label" "$QPS" "$lost" "$server_cpu" "$client_cpu" "$other_cpu" "$codes"
}

echo "dnsperf -l $SECONDS_RUN -c $CLIENTS${BENCH_THREADS:+ -T $BENCH_THREADS}, $(nproc) CPUs${BENCH_PIN:+, pinned: servers CPU 1, dnsperf CPU 0}, load average $(cut -d' ' -f1-3 /proc/loadavg)"
bench embedded "$EMB_IP" "$emb_port" "$emb_pid"
emb_qps=$QPS
bench powerdns "$PDNS_IP" "$pdns_port" "$pdns_pid"
pdns_qps=$QPS
awk -v a="$emb_qps" -v b="$pdns_qps" 'BEGIN { printf "ratio embedded/powerdns: %.2f  (%.0f / %.0f qps)\n", a / b, a, b }'
