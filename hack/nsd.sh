#!/usr/bin/env bash
# nsd.sh runs a throw-away NSD 4 on a loopback address for tests: a secondary of one primary for
# the zones given, which it transfers (IXFR, falling back to AXFR) on start and on NOTIFY from the
# primary's address. Everything lives in <dir>: nsd.conf, nsd.pid, nsd.log, the zone files,
# xfrd.state and zone.list. Transfers and SOA queries leave from <addr> (outgoing-interface), so a
# primary can tell this secondary apart by its source address. Response rate limiting is off, so
# that a test's burst of queries gets every answer.
#
# Usage:
#   hack/nsd.sh start <dir> <addr> <port> <primary-ip> <primary-port> <zone>...
#   hack/nsd.sh stop  <dir>
#
# start returns once NSD answers a DNS query on <addr>:<port>, or fails after NSD_START_TIMEOUT
# seconds (default 10) with the tail of nsd.log; a live NSD in <dir> is left alone. stop sends
# SIGTERM to the PID in <dir>/nsd.pid (SIGKILL after NSD_STOP_TIMEOUT, default 10) and is a
# no-op when nothing runs. With TSIG_KEY=<name>:<algorithm>:<base64 secret> in the environment,
# nsd signs its SOA queries and transfer requests with that key (RFC 8945), takes only answers
# and NOTIFYs signed with it. Needs the Debian package nsd (and dig, from bind9-dnsutils).
set -euo pipefail
export PATH="/usr/sbin:/usr/bin:/sbin:/bin:$PATH"

PROG=nsd.sh
DAEMON=nsd
# shellcheck source=lib/daemon.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/daemon.sh"


# pid_of <pidfile>: as in lib/daemon.sh, but NSD renames its processes ("nsd: xfrd", "nsd: main"):
# any comm starting with "nsd" counts.
pid_of() {
  local pidfile=$1 pid
  [ -f "$pidfile" ] || return 0
  pid=$(tr -dc '0-9' <"$pidfile")
  [ -n "$pid" ] || return 0
  if kill -0 "$pid" 2>/dev/null && [[ $(cat "/proc/$pid/comm" 2>/dev/null) == nsd* ]]; then
    echo "$pid"
  fi
}

cmd_start() {
  [ $# -ge 6 ] || usage
  local dir=$1 addr=$2 port=$3 primary=$4 pport=$5 pid timeout=${NSD_START_TIMEOUT:-10}
  shift 5
  check_secondary "$port" "$pport" "$addr" "$primary"
  need nsd "apt-get install -y nsd"
  need dig "apt-get install -y bind9-dnsutils"
  claim_dir "$dir" nsd.lock nsd.pid || return 0
  dir=$CLAIMED_DIR
  local key=NOKEY
  if read_tsig_key; then
    key=$TSIG_NAME
  fi
  {
    cat <<CONF
# written by hack/nsd.sh
server:
  ip-address: $addr@$port
  server-count: 1
  username: ""
  chroot: ""
  zonesdir: "$dir"
  database: ""
  pidfile: "$dir/nsd.pid"
  xfrdfile: "$dir/xfrd.state"
  zonelistfile: "$dir/zone.list"
  logfile: "$dir/nsd.log"
  verbosity: 2
  xfrd-reload-timeout: 0
  # Debian's NSD limits responses per source by default (RRL): a test's burst of queries would
  # get slipped (TC) or dropped answers.
  rrl-ratelimit: 0
remote-control:
  control-enable: no
CONF
    [ "$key" = NOKEY ] || printf 'key:\n  name: "%s"\n  algorithm: %s\n  secret: "%s"\n' "$TSIG_NAME" "$TSIG_ALG" "$TSIG_SECRET"
    for zone in "$@"; do
      zone=${zone%.}
      check_zone "$zone"
      cat <<CONF
zone:
  name: "$zone"
  zonefile: "$zone.zone"
  request-xfr: $primary@$pport $key
  allow-notify: $primary $key
  outgoing-interface: $addr
  provide-xfr: 127.0.0.0/8 NOKEY
CONF
    done
  } >"$dir/nsd.conf"
  # -d: foreground. 9>&-: nsd must not hold the lock.
  nsd -d -c "$dir/nsd.conf" </dev/null >>"$dir/nsd.log" 2>&1 9>&- &
  pid=$!
  wait_up "$pid" "$dir/nsd.log" "$timeout" dig +time=1 +tries=1 -p "$port" @"$addr" version.server txt chaos
  echo "$pid" >"$dir/nsd.pid"
  log "nsd pid $pid: dns $addr:$port, secondary of $primary:$pport for $*"
}

cmd_stop() {
  [ $# -eq 1 ] || usage
  stop_daemon "$1" nsd.lock nsd.pid "${NSD_STOP_TIMEOUT:-10}"
}

dispatch "$@"
