#!/usr/bin/env bash
# bench-dns.sh compares the query throughput and the CPU cost per answer of the embedded
# authoritative server (pkg/dnsserver, served by hack/dnsbench) with CoreDNS 1.15 (`file` plugin),
# Knot DNS (Debian knot, 1 UDP worker), NSD (Debian nsd, 1 server, RRL off) and PowerDNS
# Authoritative (gsqlite3, all caches off, hack/pdns.sh) on the same zone and the same dnsperf
# query mix, one server after the other. It prints a table of qps, the server's CPU, answers per
# server CPU-second and the ratios of each to Knot, and whether the target (the embedded
# server at least 0.8x Knot's answers per server CPU-second on one core) is met.
#
# Server CPU is that of the server's whole process tree (proc_tree): the PID started here and
# every descendant, found by parent PID in /proc, whatever the processes are called. NSD answers
# from a grandchild ("nsd: main" forks "nsd: server 1"), PowerDNS is started by hack/pdns.sh,
# Knot and the embedded server are one process each. The softirq work the kernel does during a
# server's system calls (the loopback delivery of its answers) counts as that server's system
# time when the kernel does not account interrupt time apart (CONFIG_IRQ_TIME_ACCOUNTING off, as
# on the machine of docs/design.md's figures); softirq work in ksoftirqd shows under "other
# processes".
#
# Pinned (BENCH_PIN=1) every server runs on CPU 1 and the dnsperf processes share CPU 0, so
# GOMAXPROCS is 1 for the embedded server: the one-core figures. Every thread of the server is
# bound to CPU 1 again once it answers (pin_tree): Knot binds its UDP workers to CPUs itself, the
# first to CPU 0, whatever affinity it started with.
#
# Load: $BENCH_DNSPERF dnsperf processes at once (default 2), each with -c $BENCH_CLIENTS; qps
# and answers are summed. One dnsperf process sends about 130-150k qps from its core here and was
# the limit of the pinned runs: with two on the same core, the servers that could take more
# answered 8-13% more (one run: embedded 147k -> 166k qps, Knot 143k -> 155k, NSD 145k -> 160k).
# Compare the pinned rows by answers per server CPU-second, not qps: how many queries a server
# gets depends on how fast dnsperf sends. BENCH_QPS offers every server the same load (a batching
# server's cost per answer depends on how many queries each wakeup finds).
#
# What a 2-core machine can and cannot show. The last rows run unpinned: the embedded server
# with 2 SO_REUSEPORT UDP sockets (-udp-sockets 2, embedded-2core) and Knot with 2 UDP workers
# (knot-2core), the dnsperf processes on the same two cores. dnsperf needs about a core for
# 100k+ qps, so the server's two loops share the other core or so: these rows cannot show qps
# growing with sockets, only that the sockets answer alike and what an answer costs when the
# loops contend with the client. Scaling needs more cores than the load generator takes: 4 or
# more (e.g. BENCH_PIN off, BENCH_DNSPERF=2 on a 6-core machine), or dnsperf on another host.
#
# The embedded server reads and answers UDP in batches (recvmmsg/sendmmsg, ServerOptions.UDPBatch,
# pkg/dnsserver/batch_linux.go). To compare two builds, run the script once per build with
# DNSBENCH_BIN, back to back, and give the load average: the machine may be shared.
#
# It generates bench.test: SOA, NS, 1,000 A names (h1..h1000), a 3-record A set, 10 AAAA, 10 TXT
# and 10 CNAME names; and a dnsperf query file: 80% A queries for existing names (some through a
# CNAME), 10% NODATA (AAAA/TXT of A-only names) and 10% NXDOMAIN. The SOA in the file is the one the
# embedded store serves (CreateZone defaults; hack/dnsbench ends its serial at the file's), so both servers
# answer byte-for-byte alike apart from the record order and EDNS details; dig checks that on a few
# names before the runs (a difference from PowerDNS stops the run; from the others it is only
# printed: CoreDNS, Knot and NSD fill the additional sections their own way).
#
# Geo answers: "embedded-geo" is the embedded server with -geo (hack/dnsbench): every A
# set is a geo Gslb's three geo sets, and clients are located in a GeoIP database dnsbench writes,
# which puts loopback in DE, whose set holds the file's records. Its answers are the plain run's,
# through the geo path: a database lookup, the scope, and the cache keyed by (scope, geo tag),
# which the UDP read loop answers by the query's source address (or its ECS option). The table's
# last line gives its answers per server CPU-second beside the plain run's. BENCH_GEO_ECS=1 adds an EDNS Client Subnet option (192.0.2.0/24, DE) to that run's
# queries (dnsperf -E), so the ECS path is measured too; its answers then carry the option back
# and the answer comparison shows only that difference.
#
# DNSSEC (BENCH_DNSSEC=1): signed answers per server CPU-second, instead of the runs above. The
# embedded server signs the zone online (hack/dnsbench -sign: one CSK, ECDSAP256SHA256, NSEC);
# Knot serves the zone the embedded server transfers (dig AXFR: its DNSKEY, RRSIGs and NSEC
# chain) as a plain zone file, so both answer with the same keys and RRsets. Every query of the
# mix has the DO bit (dnsperf -D). Both servers run pinned to CPU 1 (BENCH_PIN is taken as 1)
# and stay up; the dnsperf runs alternate between them for BENCH_ROUNDS rounds (embedded, Knot,
# embedded, Knot, ...), so that both see the same machine load, and the table gives each
# round's answers per server CPU-second, its ratio, and the median ratio, against the target of
# 0.8x Knot. RRSIGs differ between the two (ECDSA signatures are made anew), so the answer check
# compares the records with each RRSIG's signature left out.
#
# CPU figures are per cent of one core over the run (a 2-CPU machine has 200%); "other processes"
# is whatever else ran meanwhile (other jobs on a shared machine, and the kernel's softirq time).
#
# Usage: hack/bench-dns.sh
# Environment (defaults):
#   BENCH_SECONDS=5       dnsperf -l
#   BENCH_CLIENTS=10      dnsperf -c of each dnsperf process (the same for every server)
#   BENCH_DNSPERF=2       dnsperf processes run at once against each server
#   BENCH_THREADS=        dnsperf -T when set (dnsperf's default otherwise)
#   BENCH_QPS=            the queries per second of all dnsperf processes together (each gets -Q
#                         BENCH_QPS/BENCH_DNSPERF): the same offered load for every server, so
#                         that no server's batches are larger only because it was sent more
#   BENCH_QUERIES=10000   lines in the query file (dnsperf loops over it)
#   BENCH_PIN=            "1": pin each server to CPU 1 and dnsperf to CPU 0 (taskset), so the load
#                         generator does not compete with the server for cores
#   BENCH_EMBEDDED_IP=127.0.0.21, BENCH_PDNS_IP=127.0.0.22, BENCH_COREDNS_IP=127.0.0.23,
#   BENCH_KNOT_IP=127.0.0.24, BENCH_NSD_IP=127.0.0.25   listen addresses (ports are free ones)
#   BENCH_GEO_ECS=        "1": the embedded-geo run's queries carry ECS 192.0.2.0/24
#   BENCH_DNSSEC=         "1": the DNSSEC mode above (embedded-signed and knot-signed only)
#   BENCH_ROUNDS=3        DNSSEC mode: rounds of one run per server
#   BENCH_SERVERS="embedded embedded-geo coredns knot nsd powerdns embedded-2core knot-2core"   which runs, in
#                         this order (the first must be embedded or embedded-2core)
#   DNSBENCH_BIN=         a prebuilt hack/dnsbench binary (else built into the temp dir)
#   COREDNS_VERSION=v1.15.0  built once from the Go module proxy (github.com/coredns/coredns, in a
#                         throw-away tools module) into ${XDG_CACHE_HOME:-~/.cache}/dnsplane/coredns-<v>/
#   BENCH_KEEP=           "1": keep the temp dir (zone, query file, logs)
#   BENCH_IGNORE_DIFF=    "1": run even when the dig check finds different answers from PowerDNS
#   BENCH_VERBOSE=        "1": print each difference from CoreDNS, Knot and NSD too (else only the names)
# Needs: go, pdns-server, pdns-backend-sqlite3, sqlite3, bind9-dnsutils (dig), dnsperf, curl, ss,
# knot, nsd (installed with apt-get when missing: sudo unless root).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

SECONDS_RUN=${BENCH_SECONDS:-5}
CLIENTS=${BENCH_CLIENTS:-10}
NQUERIES=${BENCH_QUERIES:-10000}
EMB_IP=${BENCH_EMBEDDED_IP:-127.0.0.21}
PDNS_IP=${BENCH_PDNS_IP:-127.0.0.22}
COREDNS_IP=${BENCH_COREDNS_IP:-127.0.0.23}
KNOT_IP=${BENCH_KNOT_IP:-127.0.0.24}
NSD_IP=${BENCH_NSD_IP:-127.0.0.25}
SERVERS=${BENCH_SERVERS:-embedded embedded-geo coredns knot nsd powerdns embedded-2core knot-2core}
DNSPERF_PROCS=${BENCH_DNSPERF:-2}
ROUNDS=${BENCH_ROUNDS:-3}
[[ $ROUNDS =~ ^[1-9][0-9]*$ ]] || { echo "bench-dns: BENCH_ROUNDS must be a positive number" >&2; exit 1; }
DNSPERF_EXTRA=()
if [ "${BENCH_DNSSEC:-}" = 1 ]; then
  BENCH_PIN=1 DNSPERF_EXTRA=(-D)
fi
[[ $DNSPERF_PROCS =~ ^[1-9][0-9]*$ ]] || { echo "bench-dns: BENCH_DNSPERF must be a positive number" >&2; exit 1; }
COREDNS_VERSION=${COREDNS_VERSION:-v1.15.0}
cache=${XDG_CACHE_HOME:-$HOME/.cache}/dnsplane
ZONE=bench.test
PDNS_KEY=bench-key

log() { printf 'bench-dns: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

for c in go pdns_server pdnsutil sqlite3 dig dnsperf curl ss; do
  command -v "$c" >/dev/null || die "$c not found (apt-get install -y pdns-server pdns-backend-sqlite3 sqlite3 bind9-dnsutils dnsperf curl iproute2)"
done
# Knot and NSD: installed from Debian when missing (the daemons are in /usr/sbin).
PATH=$PATH:/usr/sbin
missing=()
command -v knotd >/dev/null || missing+=(knot)
command -v nsd >/dev/null || missing+=(nsd)
if [ ${#missing[@]} -gt 0 ]; then
  sudo=()
  [ "$(id -u)" = 0 ] || sudo=(sudo)
  log "installing ${missing[*]} (apt-get)"
  "${sudo[@]}" apt-get install -y --no-install-recommends "${missing[@]}" >&2
fi
if [ "${BENCH_PIN:-}" = 1 ]; then
  command -v taskset >/dev/null || die "taskset not found"
  [ "$(nproc)" -ge 2 ] || die "BENCH_PIN=1 needs 2 CPUs"
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/dnsplane-bench.XXXXXX")
pids=()
stop_pid() {
  if [ -n "$1" ] && kill -0 "$1" 2>/dev/null; then
    kill -TERM "$1" 2>/dev/null || true
    wait "$1" 2>/dev/null || true
  fi
}
cleanup() {
  local rc=$?
  trap - EXIT INT TERM
  for p in "${pids[@]}"; do stop_pid "$p"; done
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
  # The SOA and NS the embedded store serves (CreateZone defaults; dnsbench takes the serial).
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

# --- servers -----------------------------------------------------------------------------------
# Each start_<server> starts one server in the background (pinned when BENCH_PIN=1) and sets
# SRV_IP, SRV_PORT and SRV_PID; wait_ready waits until it answers the zone's SOA.
SRV_IP='' SRV_PORT='' SRV_PID=''

# wait_ready <label> <log>: up to 20 s for an SOA answer from SRV_IP:SRV_PORT.
wait_ready() {
  for _ in $(seq 200); do
    if dig @"$SRV_IP" -p "$SRV_PORT" +norecurse +short +time=1 +tries=1 "$ZONE" SOA 2>/dev/null | grep -q .; then
      return 0
    fi
    kill -0 "$SRV_PID" 2>/dev/null || { cat "$2" >&2; die "$1 exited"; }
    sleep 0.1
  done
  cat "$2" >&2
  die "$1 not answering after 20 s"
}

dnsbench_bin() {
  local bin=${DNSBENCH_BIN:-$tmp/dnsbench}
  if [ ! -x "$bin" ]; then
    log "building hack/dnsbench"
    go build -o "$bin" ./hack/dnsbench
  fi
  echo "$bin"
}

# start_embedded [pin|geo|sign]: hack/dnsbench; with "no" unpinned with -udp-sockets 2; with
# "geo" pinned with -geo (geo sets and a generated GeoIP database); with "sign" pinned with -sign.
start_embedded() {
  # Pinned, GOMAXPROCS is 1 and so is the default number of UDP sockets.
  local bin pin=("${pin_server[@]}") sockets=() label=dnsbench
  bin=$(dnsbench_bin)
  if [ "${1:-}" = no ]; then pin=() sockets=(-udp-sockets 2) label=dnsbench-2core; fi
  if [ "${1:-}" = geo ]; then sockets=(-geo) label=dnsbench-geo; fi
  if [ "${1:-}" = sign ]; then sockets=(-sign) label=dnsbench-signed; fi
  SRV_IP=$EMB_IP SRV_PORT=$(free_port)
  "${pin[@]}" "$bin" -addr "$SRV_IP:$SRV_PORT" -zone "$ZONE" -file "$zonefile" "${sockets[@]}" \
    >"$tmp/$label.out" 2>"$tmp/$label.log" &
  SRV_PID=$!
  pids+=("$SRV_PID")
  wait_ready "$label" "$tmp/$label.log"
  sed 's/^/  /' "$tmp/$label.log" >&2
}

# coredns_bin: CoreDNS $COREDNS_VERSION, built once from the Go module proxy in a throw-away
# tools module and cached by version (like hack/envtest-bins.sh's binaries).
coredns_bin() {
  local dir=$cache/coredns-$COREDNS_VERSION scratch
  if [ ! -x "$dir/coredns" ]; then
    log "building github.com/coredns/coredns@$COREDNS_VERSION (a few minutes, once per machine)"
    mkdir -p "$dir"
    scratch=$(mktemp -d "$tmp/coredns-build.XXXXXX")
    (cd "$scratch" && go mod init dnsplane.local/coredns-build >/dev/null 2>&1 &&
      go get "github.com/coredns/coredns@$COREDNS_VERSION" >&2 &&
      go build -o "$dir/coredns.new" github.com/coredns/coredns >&2) || die "coredns build failed"
    mv "$dir/coredns.new" "$dir/coredns"
  fi
  echo "$dir/coredns"
}

start_coredns() {
  local bin
  bin=$(coredns_bin)
  SRV_IP=$COREDNS_IP SRV_PORT=$(free_port)
  mkdir -p "$tmp/coredns"
  # No log or errors plugin: nothing is written per query.
  printf '%s:%s {\n  bind %s\n  file %s\n}\n' "$ZONE" "$SRV_PORT" "$SRV_IP" "$zonefile" >"$tmp/coredns/Corefile"
  (cd "$tmp/coredns" && exec "${pin_server[@]}" "$bin" -conf Corefile -quiet) >"$tmp/coredns.log" 2>&1 &
  SRV_PID=$!
  pids+=("$SRV_PID")
  wait_ready coredns "$tmp/coredns.log"
}

# start_knot [pin|signed]: Knot with 1 UDP worker, pinned when BENCH_PIN=1; with pin "no"
# unpinned with 2 UDP workers (knot-2core, beside embedded-2core); with "signed" pinned, serving
# $signedzone (the embedded server's AXFR) as a plain zone file.
start_knot() {
  local d=$tmp/knot workers=1 pin=("${pin_server[@]}") file=$zonefile
  if [ "${1:-}" = no ]; then d=$tmp/knot-2core workers=2 pin=(); fi
  if [ "${1:-}" = signed ]; then d=$tmp/knot-signed file=$signedzone; fi
  SRV_IP=$KNOT_IP SRV_PORT=$(free_port)
  mkdir -p "$d"
  cat >"$d/knot.conf" <<CONF
server:
    rundir: "$d"
    user: root:root
    listen: $SRV_IP@$SRV_PORT
    udp-workers: $workers
    tcp-workers: 1
    background-workers: 1
log:
  - target: stderr
    any: warning
database:
    storage: "$d"
zone:
  - domain: $ZONE
    file: "$file"
    storage: "$d"
    semantic-checks: off
CONF
  "${pin[@]}" knotd -c "$d/knot.conf" >"$d.log" 2>&1 &
  SRV_PID=$!
  pids+=("$SRV_PID")
  wait_ready knot "$d.log"
}

start_nsd() {
  local d=$tmp/nsd
  SRV_IP=$NSD_IP SRV_PORT=$(free_port)
  mkdir -p "$d"
  # rrl-ratelimit 0: Debian's NSD rate-limits answers per source by default (about 1,000 qps).
  cat >"$d/nsd.conf" <<CONF
server:
    ip-address: $SRV_IP@$SRV_PORT
    server-count: 1
    username: ""
    zonesdir: "$d"
    database: ""
    pidfile: "$d/nsd.pid"
    xfrdfile: "$d/xfrd.state"
    zonelistfile: "$d/zone.list"
    logfile: "$d/nsd.log"
    rrl-ratelimit: 0
    verbosity: 0
remote-control:
    control-enable: no
zone:
    name: $ZONE
    zonefile: "$zonefile"
CONF
  "${pin_server[@]}" nsd -d -c "$d/nsd.conf" >"$tmp/nsd.log" 2>&1 &
  SRV_PID=$!
  pids+=("$SRV_PID")
  wait_ready nsd "$d/nsd.log"
}

start_powerdns() {
  local api_port
  SRV_IP=$PDNS_IP SRV_PORT=$(free_port)
  api_port=$(free_port)
  # pdns.sh starts pdns_server as its child: pinning the script pins the server.
  PDNS_LOCAL_ADDRESS=$SRV_IP "${pin_server[@]}" "$root/hack/pdns.sh" start "$tmp/pdns" "$SRV_PORT" "$api_port" "$PDNS_KEY"
  SRV_PID=$(cat "$tmp/pdns/pdns.pid")
  pdnsutil --config-dir="$tmp/pdns" load-zone "$ZONE" "$zonefile" >"$tmp/pdnsutil.log" 2>&1 ||
    { cat "$tmp/pdnsutil.log" >&2; die "pdnsutil load-zone failed"; }
}

# --- same answers? -----------------------------------------------------------------------------
# probe <ip> <port> <name> <type>: rcode, flags and the sorted answer/authority/additional records
# (the embedded server rotates multi-record answers; EDNS details are left out). In the DNSSEC
# mode the query has the DO bit and each RRSIG is printed without its signature.
probe() {
  local do=()
  [ "${BENCH_DNSSEC:-}" = 1 ] && do=(+dnssec)
  dig @"$1" -p "$2" +norecurse +noall +comments +answer +authority +additional +time=2 +tries=1 "${do[@]}" "$3" "$4" |
    awk '/->>HEADER<<-/ { sub(/.*status: /, ""); sub(/,.*/, ""); print "status " $0; next }
         /^;; flags:/   { sub(/^;; flags: /, ""); sub(/;.*/, ""); print "flags " $0; next }
         /^;/ || NF == 0 { next }
         $4 == "RRSIG"  { print $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12; next }
         { $1 = $1; print }' | sort
}
checks=("$ZONE SOA" "$ZONE NS" "ns1.$ZONE A" "h1.$ZONE A" "h1000.$ZONE A" "multi.$ZONE A"
  "c3.$ZONE A" "c3.$ZONE CNAME" "v7.$ZONE AAAA" "t5.$ZONE TXT" "h42.$ZONE AAAA" "H42.$ZONE TXT"
  "nx1.$ZONE A" "deep.nx1.$ZONE AAAA" "example.org A")

# compare <label> <ip> <port> <strict>: the embedded server's answers against this server's;
# with strict "1" a difference stops the run (unless BENCH_IGNORE_DIFF=1).
EMB_REF_PORT=
compare() {
  local label=$1 ip=$2 port=$3 strict=$4 diffs=0 a b name type
  for q in "${checks[@]}"; do
    read -r name type <<<"$q"
    a=$(probe "$EMB_IP" "$EMB_REF_PORT" "$name" "$type")
    b=$(probe "$ip" "$port" "$name" "$type")
    if [ "$a" != "$b" ]; then
      diffs=$((diffs + 1))
      printf '  DIFF  %-9s %s\n' "$label" "$q"
      if [ "$strict" = 1 ] || [ "${BENCH_VERBOSE:-}" = 1 ]; then
        diff <(echo "$a") <(echo "$b") | sed "s/^</    embedded:/; s/^>/    $label:/" | grep -v '^[0-9]' || true
      fi
    fi
  done
  printf '  %-9s %d of %d answers as the embedded server'"'"'s\n' "$label" "$((${#checks[@]} - diffs))" "${#checks[@]}"
  if [ "$diffs" -gt 0 ] && [ "$strict" = 1 ]; then
    [ "${BENCH_IGNORE_DIFF:-}" = 1 ] || die "$diffs of ${#checks[@]} answers differ (BENCH_IGNORE_DIFF=1 to run anyway)"
    log "$diffs answers differ; running anyway"
  fi
}
# --- dnsperf -----------------------------------------------------------------------------------
clk=$(getconf CLK_TCK)
# proc_tree <pid> <what>: the process tree of pid (pid and every descendant), found from each
# process's parent PID in /proc/<pid>/stat, never from process names: NSD's answering process is
# a grandchild of the PID started here ("nsd: main" forks "nsd: server 1", names with a space),
# and PowerDNS's pdns_server is started by hack/pdns.sh. With what "pids" it prints their PIDs;
# with "ticks" their CPU in clock ticks (CLK_TCK a second): user + system time of each live
# process (all its threads) plus that of its children that have exited and been waited for
# (cutime + cstime), so nothing is counted twice. The fields are read after the last ")" of the
# line, since a name may hold spaces or parentheses (proc(5): field 4 ppid, 14 utime, 15 stime,
# 16 cutime, 17 cstime).
# A process that exits between the glob and cat's read fails cat, which pipefail and set -e would
# turn into a silent exit of the script: cat's status is ignored.
proc_tree() {
  { cat /proc/[0-9]*/stat 2>/dev/null || true; } | awk -v root="$1" -v what="$2" '
    {
      pid = $1
      rest = $0
      sub(/.*\) /, "", rest)            # state ppid ... : field 3 of proc(5) is rest 1
      split(rest, f, " ")
      parent[pid] = f[2]
      ticks[pid] = f[12] + f[13] + f[14] + f[15]
    }
    END {
      if (!(root in parent)) { if (what == "ticks") print 0; exit }
      inTree[root] = 1
      do {                               # add children of the tree until none is new
        grew = 0
        for (p in parent) if (!(p in inTree) && (parent[p] in inTree)) { inTree[p] = 1; grew = 1 }
      } while (grew)
      t = 0
      for (p in inTree) { t += ticks[p]; if (what == "pids") print p }
      if (what == "ticks") print t
    }'
}
tree_ticks() { proc_tree "$1" ticks; }

# pin_tree <pid>: with BENCH_PIN=1, binds every thread of every process of pid's tree to CPU 1
# once the server answers. taskset at the start is not enough: Knot binds its UDP worker threads
# to CPUs itself, the first to CPU 0 (where dnsperf runs), whatever the affinity it inherited.
pin_tree() {
  [ ${#pin_server[@]} -gt 0 ] || return 0
  local p
  for p in $(proc_tree "$1" pids); do
    taskset -a -p -c 1 "$p" >/dev/null 2>&1 || true
  done
  for p in $(proc_tree "$1" pids); do
    for t in /proc/"$p"/task/*/status; do
      grep -q '^Cpus_allowed_list:[[:space:]]*1$' "$t" 2>/dev/null || [ ! -e "$t" ] ||
        die "thread $t of the server is not bound to CPU 1"
    done
  done
}
busy_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8 + $9; exit }' /proc/stat; }

# run_dnsperf <out> <args...>: one dnsperf process; its output in <out>, its user, system and
# real seconds in <out>.time.
run_dnsperf() {
  local out=$1
  shift
  local TIMEFORMAT='%U %S %R'
  { time "${client_pin[@]}" dnsperf "$@" >"$out" 2>"$out.err"; } 2>"$out.time"
}

# bench <label> <ip> <port> <server pid>: runs $DNSPERF_PROCS dnsperf processes at once, each with
# the whole query file and -c $CLIENTS; sets QPS (their queries per second, summed), ANSWERED
# (queries completed, summed) and SCPU_S (the CPU seconds of the server's process tree over the
# run), WALL_S (the run's seconds, dnsperf's wait for late answers included) and prints a
# summary line.
QPS='' ANSWERED='' SCPU_S='' WALL_S=''
bench() {
  local label=$1 ip=$2 port=$3 pid=$4 out=$tmp/dnsperf-$1 t0 t1 b0 b1 start end i
  local args=(-s "$ip" -p "$port" -d "$queries" -l "$SECONDS_RUN" -c "$CLIENTS" "${DNSPERF_EXTRA[@]}")
  [ -n "${BENCH_THREADS:-}" ] && args+=(-T "$BENCH_THREADS")
  [ -n "${BENCH_QPS:-}" ] && args+=(-Q "$((BENCH_QPS / DNSPERF_PROCS))")
  # ECS 192.0.2.0/24: code 8, family 1, source 24, scope 0, address c00002 (RFC 7871 §6).
  [ "$label" = embedded-geo ] && [ "${BENCH_GEO_ECS:-}" = 1 ] && args+=(-e -E 8:00011800c00002)
  log "${DNSPERF_PROCS}x dnsperf ${args[*]}  -> $label"
  local procs=()
  t0=$(tree_ticks "$pid")
  b0=$(busy_ticks)
  start=$(date +%s.%N)
  for i in $(seq "$DNSPERF_PROCS"); do
    run_dnsperf "$out.$i.txt" "${args[@]}" &
    procs+=($!)
  done
  for i in "${!procs[@]}"; do
    wait "${procs[$i]}" || { cat "$out.$((i + 1)).txt" "$out.$((i + 1)).txt.err" >&2; die "dnsperf against $label failed"; }
  done
  end=$(date +%s.%N)
  t1=$(tree_ticks "$pid")
  b1=$(busy_ticks)
  local files=()
  for i in $(seq "$DNSPERF_PROCS"); do files+=("$out.$i.txt"); done
  QPS=$(awk '/Queries per second:/ { q += $4; n++ } END { if (n) printf "%.1f", q }' "${files[@]}")
  [ -n "$QPS" ] || { cat "${files[@]}" >&2; die "no qps in dnsperf output"; }
  ANSWERED=$(awk '/Queries completed:/ { n += $3 } END { print n + 0 }' "${files[@]}")
  local lost codes server_cpu client_cpu other_cpu client_s
  lost=$(awk '/Queries lost:/ { n += $3 } END { print n + 0 }' "${files[@]}")
  codes=$(sed -n 's/^ *Response codes: *//p' "${files[@]}" | paste -sd';' -)
  server_cpu=$(awk -v d="$((t1 - t0))" -v hz="$clk" -v s="$start" -v e="$end" 'BEGIN { printf "%.0f%%", 100 * d / hz / (e - s) }')
  SCPU_S=$(awk -v d="$((t1 - t0))" -v hz="$clk" 'BEGIN { printf "%.2f", d / hz }')
  WALL_S=$(awk -v s="$start" -v e="$end" 'BEGIN { printf "%.2f", e - s }')
  client_s=$(cat "${files[@]/%/.time}" | awk '{ c += $1 + $2 } END { printf "%.2f", c }')
  client_cpu=$(awk -v c="$client_s" -v s="$start" -v e="$end" 'BEGIN { printf "%.0f%%", 100 * c / (e - s) }')
  # Everything else the machine ran meanwhile (other jobs on a shared box), of $(nproc)00%.
  other_cpu=$(awk -v b="$((b1 - b0))" -v t="$((t1 - t0))" -v hz="$clk" -v c="$client_s" -v s="$start" -v e="$end" '
    BEGIN { o = (b - t) / hz - c; if (o < 0) o = 0; printf "%.0f%%", 100 * o / (e - s) }')
  printf '%-14s %8.0f qps  lost %s  CPU: server %s, dnsperf %s, other processes %s  (%s)\n' \
    "$label" "$QPS" "$lost" "$server_cpu" "$client_cpu" "$other_cpu" "$codes"
}

# --- DNSSEC mode -------------------------------------------------------------------------------
# dnssec_mode: the embedded server signing online and Knot serving its AXFR, both pinned and up
# for the whole mode, dnsperf -D against each in turn for $ROUNDS rounds; a table of each round.
signedzone=$tmp/$ZONE.signed.zone
dnssec_mode() {
  local emb_port emb_pid knot_port knot_pid r label srv
  local -a rows=() ratios=()
  client_pin=("${pin_client[@]}")
  start_embedded sign
  emb_port=$SRV_PORT emb_pid=$SRV_PID EMB_REF_PORT=$SRV_PORT
  dig @"$EMB_IP" -p "$emb_port" +onesoa +nocmd +nostats +nocomments +time=10 "$ZONE" AXFR >"$signedzone"
  grep -q 'RRSIG' "$signedzone" || die "the AXFR of the signed zone holds no RRSIG"
  log "signed zone: $(grep -vc '^;' "$signedzone") records ($(grep -c 'RRSIG' "$signedzone") RRSIGs)"
  start_knot signed
  knot_port=$SRV_PORT knot_pid=$SRV_PID
  compare knot-signed "$KNOT_IP" "$knot_port" 0
  pin_tree "$emb_pid"
  pin_tree "$knot_pid"
  declare -A n=() c=()
  for r in $(seq "$ROUNDS"); do
    for srv in embedded-signed knot-signed; do
      label=$srv.$r
      if [ "$srv" = embedded-signed ]; then
        bench "$label" "$EMB_IP" "$emb_port" "$emb_pid"
      else
        bench "$label" "$KNOT_IP" "$knot_port" "$knot_pid"
      fi
      n[$label]=$ANSWERED c[$label]=$SCPU_S
    done
    ratios+=("$(awk -v a="${n[embedded-signed.$r]}" -v ac="${c[embedded-signed.$r]}" -v k="${n[knot-signed.$r]}" -v kc="${c[knot-signed.$r]}" \
      'BEGIN { if (ac + 0 < 0.05 || kc + 0 < 0.05) print "-"; else printf "%.2f", (a / ac) / (k / kc) }')")
    rows+=("$(awk -v r="$r" -v a="${n[embedded-signed.$r]}" -v ac="${c[embedded-signed.$r]}" -v k="${n[knot-signed.$r]}" -v kc="${c[knot-signed.$r]}" -v x="${ratios[-1]}" \
      'BEGIN { printf "| %d | %.0f (%.2f s) | %.0f (%.2f s) | %s |", r, (ac > 0 ? a / ac : 0), ac, (kc > 0 ? k / kc : 0), kc, x }')")
  done
  stop_pid "$knot_pid"
  stop_pid "$emb_pid"
  echo
  echo "DO queries (dnsperf -D), pinned to CPU 1; answers per server CPU-second (server CPU seconds):"
  echo "| round | embedded, signing online | Knot, the signed zone as a file | ratio |"
  echo "|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  printf '%s\n' "${ratios[@]}" | grep -v '^-$' | sort -n | awk '{ v[NR] = $1 } END {
    if (NR == 0) exit
    m = (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
    printf "target: embedded signing online >= 0.80x Knot in signed answers per server CPU-second (one core): median %.2fx, %s\n", m, (m >= 0.8 ? "met" : "not met")
  }'
}

# --- runs --------------------------------------------------------------------------------------
# One server at a time: start, compare with the embedded server (kept running as the reference on
# its own address), dnsperf, stop. The embedded reference is the first pinned run's server.
echo "${DNSPERF_PROCS}x dnsperf -l $SECONDS_RUN -c $CLIENTS${BENCH_THREADS:+ -T $BENCH_THREADS}, $(nproc) CPUs${BENCH_PIN:+, pinned: servers CPU 1, dnsperf CPU 0}, load average $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "${BENCH_DNSSEC:-}" = 1 ]; then
  dnssec_mode
  echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
  exit 0
fi
declare -A qps=() answered=() cpus=() walls=()
ref_pid=
order=()
for srv in $SERVERS; do
  client_pin=("${pin_client[@]}")
  case $srv in
    embedded) start_embedded ;;
    embedded-2core) start_embedded no; client_pin=() ;;
    embedded-geo) start_embedded geo ;;
    knot-2core) start_knot no; client_pin=() ;;
    coredns | knot | nsd | powerdns) "start_$srv" ;;
    *) die "unknown server $srv in BENCH_SERVERS" ;;
  esac
  if [ -z "$EMB_REF_PORT" ]; then
    [ "$srv" = embedded ] || [ "$srv" = embedded-2core ] || die "BENCH_SERVERS must start with embedded"
    EMB_REF_PORT=$SRV_PORT ref_pid=$SRV_PID
  elif [ -n "$ref_pid" ]; then
    strict=0
    [ "$srv" = powerdns ] && strict=1
    compare "$srv" "$SRV_IP" "$SRV_PORT" "$strict"
  else
    printf '  %-9s not compared: the embedded reference is stopped (the -2core rows)\n' "$srv"
  fi
  case $srv in
    # The reference would compete for the two cores: stop it first.
    *-2core) if [ "$SRV_PID" != "$ref_pid" ]; then stop_pid "$ref_pid"; ref_pid=''; fi ;;
  esac
  case $srv in *-2core) ;; *) pin_tree "$SRV_PID" ;; esac
  bench "$srv" "$SRV_IP" "$SRV_PORT" "$SRV_PID"
  qps[$srv]=$QPS cpus[$srv]=$SCPU_S answered[$srv]=$ANSWERED walls[$srv]=$WALL_S
  order+=("$srv")
  if [ "$srv" = powerdns ]; then
    "$root/hack/pdns.sh" stop "$tmp/pdns" || true
  elif [ "$SRV_PID" != "$ref_pid" ]; then
    stop_pid "$SRV_PID"
  fi
done
[ -z "$ref_pid" ] || stop_pid "$ref_pid"

# --- table -------------------------------------------------------------------------------------
echo
# Answers per server CPU-second is the figure that separates the servers when dnsperf is the
# limit, and the fairer one on a busy machine, where a pinned server does not get its whole core.
# Each row's ratios are to Knot of the same kind: the pinned rows to "knot", the -2core rows to
# "knot-2core" (to "knot" when it did not run).
echo "| server | qps | qps ratio to Knot | server CPU | answers per server CPU-second | ratio to Knot |"
echo "|---|---|---|---|---|---|"
for srv in "${order[@]}"; do
  ref=knot
  case $srv in *-2core) [ -n "${qps[knot-2core]:-}" ] && ref=knot-2core ;; esac
  awk -v s="$srv" -v q="${qps[$srv]}" -v k="${qps[$ref]:-}" -v n="${answered[$srv]}" -v c="${cpus[$srv]}" \
    -v kn="${answered[$ref]:-}" -v kc="${cpus[$ref]:-}" -v l="${walls[$srv]}" 'BEGIN {
    r = (k == "" || k == 0) ? "-" : sprintf("%.2f", q / k)
    e = (c + 0 < 0.05) ? "-" : sprintf("%.0f", n / c)
    er = (e == "-" || kc == "" || kc + 0 < 0.05) ? "-" : sprintf("%.2f", (n / c) / (kn / kc))
    printf "| %s | %.0f | %s | %.2f s (%.0f%%) | %s | %s |\n", s, q, r, c, 100 * c / l, e, er
  }'
done
if [ -n "${cpus[embedded]:-}" ] && [ -n "${cpus[knot]:-}" ]; then
  # The target: at least 0.8x Knot's answers per server CPU-second on one core.
  awk -v n="${answered[embedded]}" -v c="${cpus[embedded]}" -v kn="${answered[knot]}" -v kc="${cpus[knot]}" 'BEGIN {
    if (c + 0 < 0.05 || kc + 0 < 0.05) exit
    r = (n / c) / (kn / kc)
    printf "target: embedded >= 0.80x Knot in answers per server CPU-second (one core): %.2fx, %s\n", r, (r >= 0.8 ? "met" : "not met")
  }'
fi
if [ -n "${cpus[embedded]:-}" ] && [ -n "${cpus[embedded-geo]:-}" ]; then
  # The cost of a geo answer beside a plain one.
  awk -v n="${answered[embedded]}" -v c="${cpus[embedded]}" -v gn="${answered[embedded-geo]}" -v gc="${cpus[embedded-geo]}" -v ecs="${BENCH_GEO_ECS:-}" 'BEGIN {
    if (c + 0 < 0.05 || gc + 0 < 0.05) exit
    printf "geo: %.0f answers per server CPU-second%s beside plain %.0f: %.2fx\n", gn / gc, (ecs == "1" ? " (queries with ECS)" : " (located by the source address)"), n / c, (gn / gc) / (n / c)
  }'
fi
if [ -n "${qps[embedded]:-}" ] && [ -n "${qps[powerdns]:-}" ]; then
  awk -v a="${qps[embedded]}" -v b="${qps[powerdns]}" 'BEGIN { printf "ratio embedded/powerdns: %.2f  (%.0f / %.0f qps)\n", a / b, a, b }'
fi
echo "server CPU: of the server's whole process tree over the run (a pinned server has 100% at most)"
echo "-2core rows: unpinned, 2 SO_REUSEPORT sockets (Knot: 2 UDP workers), dnsperf on the same cores;"
echo "  on a machine of fewer than 4 cores they cannot show qps growing with sockets (see the header)"
echo "pinned rows at dnsperf's limit compare by answers per server CPU-second, not qps"
