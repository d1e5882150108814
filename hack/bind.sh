#!/usr/bin/env bash
# bind.sh runs a throw-away BIND 9.18 (named) on 127.0.0.1 for tests: an authoritative-only server
# with allow-new-zones, a TSIG key "dnsplane-test" for RFC 2136 updates and AXFR, and an rndc
# control channel. Everything lives in <dir>: named.conf, the keys, named.pid, named.log, zone
# files, journals, _default.nzd and bind.lock (serialises commands on <dir>).
#
# Usage:
#   hack/bind.sh start   <dir> <dns-port> <rndc-port>
#   hack/bind.sh stop    <dir>
#   hack/bind.sh addzone <dir> <zone> [signed]  # minimal zone (SOA, NS ns1.<zone>, its A 127.0.0.1);
#                                               # signed: BIND signs it (dnssec-policy default)
#   hack/bind.sh delzone <dir> <zone>      # rndc delzone -clean
#
# start writes <dir>/tsig.secret (the base64 secret of key dnsplane-test, hmac-sha256) and
# <dir>/ports ("<dns-port> <rndc-port>"), starts "named -g" in the background and returns once it
# answers "rndc status" and a DNS query, or fails after BIND_START_TIMEOUT seconds (default 10)
# with the tail of named.log. A live server in <dir> is left alone. Added zones are updatable and
# transferable with the TSIG key only.
# stop runs "rndc stop", falls back to SIGTERM/SIGKILL on the PID in <dir>/named.pid, and is a
# no-op when nothing runs.
#
# Needs the Debian packages bind9 and bind9-dnsutils.
set -euo pipefail
export PATH="/usr/sbin:/usr/bin:/sbin:/bin:$PATH"

KEY=dnsplane-test

PROG=bind.sh
DAEMON=named
# shellcheck source=lib/daemon.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/daemon.sh"


rndc_() { # rndc_ <dir> args...
  local dir=$1
  shift
  local rport
  rport=$(awk '{print $2}' "$dir/ports")
  timeout 10 rndc -s 127.0.0.1 -p "$rport" -k "$dir/rndc.key" "$@"
}


cmd_start() {
  [ $# -eq 3 ] || usage
  local dir=$1 dns_port=$2 rndc_port=$3 pid timeout=${BIND_START_TIMEOUT:-10}
  check_ports "$dns_port" "$rndc_port"
  need named "apt-get install -y bind9 bind9-dnsutils"
  need dig "apt-get install -y bind9-dnsutils"
  claim_dir "$dir" bind.lock named.pid || return 0
  dir=$CLAIMED_DIR
  [ -s "$dir/tsig.key" ] || tsig-keygen -a hmac-sha256 "$KEY" >"$dir/tsig.key"
  [ -s "$dir/rndc.key" ] || tsig-keygen -a hmac-sha256 rndc-key >"$dir/rndc.key"
  sed -n 's/.*secret "\(.*\)";.*/\1/p' "$dir/tsig.key" >"$dir/tsig.secret"
  echo "$dns_port $rndc_port" >"$dir/ports"
  cat >"$dir/named.conf" <<CONF
// written by hack/bind.sh
include "$dir/tsig.key";
include "$dir/rndc.key";
options {
  directory "$dir";
  pid-file "$dir/named.pid";
  session-keyfile "$dir/session.key";
  managed-keys-directory "$dir";
  listen-on port $dns_port { 127.0.0.1; };
  listen-on-v6 { none; };
  recursion no;
  allow-new-zones yes;
  dnssec-validation no;
  notify no;
};
controls {
  inet 127.0.0.1 port $rndc_port allow { 127.0.0.1; } keys { rndc-key; };
};
CONF
  # -g: foreground, logs to stderr. 9>&-: named must not hold the lock.
  named -g -c "$dir/named.conf" </dev/null >>"$dir/named.log" 2>&1 9>&- &
  pid=$!
  wait_up "$pid" "$dir/named.log" "$timeout" named_up "$dir" "$dns_port"
  # named -g writes its own pid-file; make sure it holds the right PID.
  echo "$pid" >"$dir/named.pid"
  log "named pid $pid: dns 127.0.0.1:$dns_port, rndc 127.0.0.1:$rndc_port"
}

# named_up <dir> <dns-port>: rndc and the DNS port both answer.
named_up() {
  rndc_ "$1" status && dig +short +time=1 +tries=1 -p "$2" @127.0.0.1 version.bind txt chaos
}

cmd_stop() {
  [ $# -eq 1 ] || usage
  local dir=$1 pid timeout=${BIND_STOP_TIMEOUT:-10}
  [ -d "$dir" ] || return 0
  dir=$(abs "$dir")
  lock "$dir/bind.lock"
  pid=$(pid_of "$dir/named.pid")
  [ -n "$pid" ] || { rm -f "$dir/named.pid"; return 0; }
  rndc_ "$dir" stop >/dev/null 2>&1 || kill -TERM "$pid" 2>/dev/null || true
  wait_gone "$pid" "$timeout"
  rm -f "$dir/named.pid"
}

# zone_command <dir> <zone>: what addzone and delzone check first: a plain zone name and a named
# running in dir, under dir's lock. It sets DIR (absolute) and ZONE (without a final dot).
zone_command() {
  DIR=$(abs "$1")
  ZONE=${2%.}
  check_zone "$ZONE"
  lock "$DIR/bind.lock"
  [ -n "$(pid_of "$DIR/named.pid")" ] || die "named is not running in $DIR"
}

cmd_addzone() {
  [ $# -eq 2 ] || { [ $# -eq 3 ] && [ "$3" = signed ]; } || usage
  local policy=""
  [ "${3:-}" = signed ] && policy="dnssec-policy default; "
  zone_command "$1" "$2"
  local dir=$DIR zone=$ZONE
  local file="$dir/$zone.db"
  rm -f "$file" "$file.jnl"
  cat >"$file" <<ZONE
\$TTL 300
@ IN SOA ns1.$zone. hostmaster.$zone. 1 3600 600 86400 60
@ IN NS ns1.$zone.
ns1 IN A 127.0.0.1
ZONE
  rndc_ "$dir" addzone "$zone" "{ type primary; file \"$file\"; ${policy}allow-update { key $KEY; }; allow-transfer { key $KEY; }; };" >/dev/null ||
    die "rndc addzone $zone failed"
}

cmd_delzone() {
  [ $# -eq 2 ] || usage
  zone_command "$@"
  rndc_ "$DIR" delzone -clean "$ZONE" >/dev/null || die "rndc delzone $ZONE failed"
}

dispatch "$@"
