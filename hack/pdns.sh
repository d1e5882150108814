#!/usr/bin/env bash
# pdns.sh runs a throw-away PowerDNS Authoritative server (4.7, gsqlite3 backend) on loopback for
# tests and benchmarks, with DNSSEC (gsqlite3-dnssec: zones given keys through the cryptokeys API
# are signed online). Everything lives in <dir>: pdns.conf, pdns.sqlite3, pdns.pid, pdns.log, the
# control socket and pdns.lock (serialises start/stop on <dir>). All caches are off: with the
# default caches a re-created zone keeps answering REFUSED for about 20 s.
#
# Usage:
#   hack/pdns.sh start  <dir> <dns-port> <api-port> <api-key>
#   hack/pdns.sh stop   <dir>
#   hack/pdns.sh status <dir>            # exit 0 when running
#
# start is idempotent: when <dir> already has a live server it only waits for its API (and fails
# when that server does not answer on <api-port> with <api-key>). A stale PID file is replaced. The
# database is created from the packaged schema when missing and kept otherwise (stop + start keeps
# the zones; remove <dir> for a clean state). It returns once the HTTP API answers, or fails after
# PDNS_START_TIMEOUT seconds (default 10) with the tail of pdns.log.
# stop sends SIGTERM to the PID in <dir>/pdns.pid, waits (SIGKILL after PDNS_STOP_TIMEOUT, default
# 10 s) and is a no-op when nothing runs.
#
# Environment:
#   PDNS_LOCAL_ADDRESS  address the DNS server listens on (default 127.0.0.1); the API is always
#                       on 127.0.0.1
#   PDNS_EXTRA_CONF     extra pdns.conf lines (newline separated), appended last, so they win
#
# Needs the Debian packages pdns-server, pdns-backend-sqlite3, sqlite3 and curl.
set -euo pipefail

SCHEMA=/usr/share/pdns-backend-sqlite3/schema/schema.sqlite3.sql

PROG=pdns.sh
DAEMON=pdns_server
# shellcheck source=lib/daemon.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib/daemon.sh"

api_ok() { # api_ok <api-port> <api-key>
  curl -sf -m 2 -o /dev/null -H "X-API-Key: $2" "http://127.0.0.1:$1/api/v1/servers/localhost"
}


cmd_start() {
  [ $# -eq 4 ] || usage
  local dir=$1 dns_port=$2 api_port=$3 key=$4 pid
  local timeout=${PDNS_START_TIMEOUT:-10} addr=${PDNS_LOCAL_ADDRESS:-127.0.0.1}
  check_ports "$dns_port" "$api_port"
  command -v pdns_server >/dev/null || die "pdns_server not found (apt-get install -y pdns-server pdns-backend-sqlite3 sqlite3)"
  command -v sqlite3 >/dev/null || die "sqlite3 not found (apt-get install -y sqlite3)"
  [ -f "$SCHEMA" ] || die "$SCHEMA not found (apt-get install -y pdns-backend-sqlite3)"
  mkdir -p "$dir"
  dir=$(cd "$dir" && pwd)
  lock "$dir/pdns.lock"

  local deadline=$((SECONDS + timeout))
  pid=$(pid_of "$dir/pdns.pid")
  if [ -n "$pid" ]; then
    log "already running in $dir (pid $pid)"
    deadline=$((SECONDS + 2)) # it is up already: a silent API means another port or key
  else
    rm -f "$dir/pdns.pid"
    if [ ! -s "$dir/pdns.sqlite3" ]; then
      rm -f "$dir/pdns.sqlite3"
      sqlite3 "$dir/pdns.sqlite3" <"$SCHEMA" || die "cannot create $dir/pdns.sqlite3"
    fi
    cat >"$dir/pdns.conf" <<EOF
# written by hack/pdns.sh
launch=gsqlite3
gsqlite3-database=$dir/pdns.sqlite3
# DNSSEC on: the cryptokeys and domainmetadata tables of the schema hold the keys the API imports
gsqlite3-dnssec=yes
local-address=$addr
local-port=$dns_port
socket-dir=$dir
daemon=no
guardian=no
disable-syslog=yes
log-timestamp=yes
api=yes
api-key=$key
webserver=yes
webserver-address=127.0.0.1
webserver-port=$api_port
webserver-allow-from=127.0.0.0/8
security-poll-suffix=
# caches off: answers reflect the database at once
cache-ttl=0
negquery-cache-ttl=0
query-cache-ttl=0
zone-cache-refresh-interval=0
${PDNS_EXTRA_CONF:-}
EOF
    # Plain background child (no setsid, which may fork): $! is pdns_server's own PID.
    # 9>&-: the server must not inherit (and so hold) the lock.
    pdns_server --config-dir="$dir" </dev/null >>"$dir/pdns.log" 2>&1 9>&- &
    pid=$!
    echo "$pid" >"$dir/pdns.pid"
  fi

  until api_ok "$api_port" "$key"; do
    if ! kill -0 "$pid" 2>/dev/null; then
      rm -f "$dir/pdns.pid"
      log_tail "$dir/pdns.log"
      die "pdns_server (pid $pid) exited before its API answered"
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      log_tail "$dir/pdns.log"
      die "pdns_server (pid $pid) API on 127.0.0.1:$api_port did not answer with that key (left running; hack/pdns.sh stop $dir)"
    fi
    sleep 0.1
  done
  log "pdns_server pid $pid: dns $addr:$dns_port, api http://127.0.0.1:$api_port"
}

cmd_stop() {
  [ $# -eq 1 ] || usage
  local dir=$1 pid timeout=${PDNS_STOP_TIMEOUT:-10}
  [ -d "$dir" ] || return 0
  lock "$dir/pdns.lock"
  pid=$(pid_of "$dir/pdns.pid")
  if [ -z "$pid" ]; then
    rm -f "$dir/pdns.pid"
    return 0
  fi
  kill -TERM "$pid" 2>/dev/null || true
  wait_gone "$pid" "$timeout"
  rm -f "$dir/pdns.pid"
}

cmd_status() {
  [ $# -eq 1 ] || usage
  local pid
  pid=$(pid_of "$1/pdns.pid")
  if [ -n "$pid" ]; then echo "running (pid $pid)"; else echo "stopped"; return 1; fi
}

dispatch "$@"
