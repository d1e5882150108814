#!/usr/bin/env bash
# bind-secondary.sh runs a throw-away BIND 9.18 (named) on 127.0.0.1 for tests: a secondary of
# one primary for the zones given, which it transfers (IXFR, falling back to AXFR) on start and on
# NOTIFY from the primary's address, and keeps in <dir>/<zone>.db across restarts. SOA queries and
# transfers leave from <source> (transfer-source, query-source; any 127.x address works, named
# listens only on interface addresses, so on 127.0.0.1), so a primary can tell this secondary
# apart by its source address. It has no control channel. Everything lives in <dir>: named.conf,
# named.pid, named.log, the zone files and journals. hack/bind.sh runs BIND as a primary.
#
# Usage:
#   hack/bind-secondary.sh start <dir> <port> <source> <primary-ip> <primary-port> <zone>...
#   hack/bind-secondary.sh stop  <dir>
#
# start returns once named answers a DNS query on 127.0.0.1:<port>, or fails after BIND_START_TIMEOUT
# seconds (default 10) with the tail of named.log; a live server in <dir> is left alone. A second
# start over the same <dir> keeps the zone files: named then asks the primary for the changes
# since their serials. stop sends SIGTERM to the PID in <dir>/named.pid (SIGKILL after
# BIND_STOP_TIMEOUT, default 10) and is a no-op when nothing runs. With TSIG_KEY=<name>:<algorithm>:
# <base64 secret> in the environment, named signs its SOA queries and transfer requests to the
# primary with that key (RFC 8945), and takes only answers signed with it.
# Needs the Debian packages bind9 and bind9-dnsutils.
set -euo pipefail
export PATH="/usr/sbin:/usr/bin:/sbin:/bin:$PATH"

PROG=bind-secondary.sh
DAEMON=named
# shellcheck source=lib/daemon.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/daemon.sh"


cmd_start() {
  [ $# -ge 6 ] || usage
  local dir=$1 port=$2 addr=$3 primary=$4 pport=$5 pid timeout=${BIND_START_TIMEOUT:-10}
  shift 5
  check_secondary "$port" "$pport" "$addr" "$primary"
  need named "apt-get install -y bind9 bind9-dnsutils"
  need dig "apt-get install -y bind9-dnsutils"
  claim_dir "$dir" bind.lock named.pid || return 0
  dir=$CLAIMED_DIR
  local key=""
  if read_tsig_key; then
    key=" key $TSIG_NAME"
  fi
  {
    [ -z "$key" ] || echo "key \"$TSIG_NAME\" { algorithm $TSIG_ALG; secret \"$TSIG_SECRET\"; };"
    cat <<CONF
// written by hack/bind-secondary.sh
options {
  directory "$dir";
  pid-file "$dir/named.pid";
  session-keyfile "$dir/session.key";
  managed-keys-directory "$dir";
  listen-on port $port { 127.0.0.1; };
  listen-on-v6 { none; };
  recursion no;
  dnssec-validation no;
  notify no;
  allow-transfer { 127.0.0.0/8; };
  transfer-source $addr;
  alt-transfer-source $addr;
  query-source address $addr;
};
controls { };
CONF
    for zone in "$@"; do
      zone=${zone%.}
      check_zone "$zone"
      echo "zone \"$zone\" { type secondary; primaries port $pport { $primary$key; }; file \"$dir/$zone.db\"; };"
    done
  } >"$dir/named.conf"
  # -g: foreground, logs to stderr. 9>&-: named must not hold the lock.
  named -g -c "$dir/named.conf" </dev/null >>"$dir/named.log" 2>&1 9>&- &
  pid=$!
  wait_up "$pid" "$dir/named.log" "$timeout" dig +short +time=1 +tries=1 -p "$port" @127.0.0.1 version.bind txt chaos
  echo "$pid" >"$dir/named.pid"
  log "named pid $pid: dns 127.0.0.1:$port, source $addr, secondary of $primary:$pport for $*"
}

cmd_stop() {
  [ $# -eq 1 ] || usage
  stop_daemon "$1" bind.lock named.pid "${BIND_STOP_TIMEOUT:-10}"
}

dispatch "$@"
