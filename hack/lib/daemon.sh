# shellcheck shell=bash
# daemon.sh: what hack/pdns.sh, hack/bind.sh, hack/bind-secondary.sh and hack/nsd.sh share to run one server per directory, by PID,
# with no systemd. Source it after setting PROG (the script's name, for messages) and DAEMON (the
# server's process name in /proc/<pid>/comm).

log() { printf '%s: %s\n' "$PROG" "$*" >&2; }
die() { log "$*"; exit 1; }
# usage: the script's header comment, up to its `set -euo` line.
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2; }

# abs <dir>: dir as an absolute path (it must exist).
abs() { (cd "$1" && pwd); }

# pid_of <pidfile>: the PID in pidfile if that process is a live $DAEMON (a recycled PID belongs
# to another program), else nothing.
pid_of() {
  local pidfile=$1 pid
  [ -f "$pidfile" ] || return 0
  pid=$(tr -dc '0-9' <"$pidfile")
  [ -n "$pid" ] || return 0
  if kill -0 "$pid" 2>/dev/null && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$DAEMON" ]; then
    echo "$pid"
  fi
}

# lock <lockfile>: serialise start/stop on one directory (held until the script exits).
lock() {
  exec 9>"$1"
  flock -w 30 9 || die "cannot lock $1"
}

# need <program> <install hint>: die unless program is on PATH, naming how to install it.
need() { command -v "$1" >/dev/null || die "$1 not found ($2)"; }

# valid_port <port>: succeeds when port is a decimal number in 1..65535.
valid_port() { [[ $1 =~ ^[0-9]+$ ]] && [ "$1" -gt 0 ] && [ "$1" -lt 65536 ]; }

# claim_dir <dir> <lock-name> <pid-name>: how start opens: make dir, set CLAIMED_DIR to its
# absolute path, lock <dir>/<lock-name> (lock) and, when the $DAEMON in <dir>/<pid-name> runs
# already, say so and return 1 (start then returns 0); else remove the stale pid file.
claim_dir() {
  local pid
  mkdir -p "$1"
  CLAIMED_DIR=$(abs "$1")
  lock "$CLAIMED_DIR/$2"
  pid=$(pid_of "$CLAIMED_DIR/$3")
  if [ -n "$pid" ]; then
    log "already running in $CLAIMED_DIR (pid $pid)"
    return 1
  fi
  rm -f "$CLAIMED_DIR/$3"
}

# log_tail <logfile>: the last 25 lines of the server's log, for a failed start.
log_tail() {
  if [ -f "$1" ]; then
    log "last lines of $1:"
    tail -n 25 "$1" >&2
  fi
}

# wait_gone <pid> <timeout-seconds>: wait for pid to exit after it was asked to; SIGKILL it when
# the timeout passes.
wait_gone() {
  local pid=$1 timeout=$2
  local deadline=$((SECONDS + timeout))
  while kill -0 "$pid" 2>/dev/null; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      log "$DAEMON (pid $pid) still running after ${timeout}s; sending SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      sleep 0.2
      return
    fi
    sleep 0.1
  done
}

# wait_up <pid> <logfile> <timeout-seconds> <probe...>: wait until the probe command (a function
# or a program, its output dropped) succeeds. When pid exits first, or the timeout passes (pid is
# then SIGKILLed), print the log's tail and die.
wait_up() {
  local pid=$1 logfile=$2 timeout=$3
  shift 3
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    if ! kill -0 "$pid" 2>/dev/null; then
      log_tail "$logfile"
      die "$DAEMON (pid $pid) exited before it answered"
    fi
    if [ "$SECONDS" -ge "$deadline" ]; then
      log_tail "$logfile"
      kill -KILL "$pid" 2>/dev/null || true
      die "$DAEMON (pid $pid) did not answer within ${timeout}s (killed)"
    fi
    sleep 0.1
  done
}

# stop_daemon <dir> <lock-name> <pid-name> <timeout-seconds>: SIGTERM the $DAEMON whose PID is in
# <dir>/<pid-name> (under <dir>/<lock-name>), wait for it (wait_gone), and remove the pid file. A
# missing directory or a server not running is not an error.
stop_daemon() {
  local dir=$1 lockname=$2 pidname=$3 timeout=$4 pid
  [ -d "$dir" ] || return 0
  dir=$(abs "$dir")
  lock "$dir/$lockname"
  pid=$(pid_of "$dir/$pidname")
  [ -n "$pid" ] || { rm -f "$dir/$pidname"; return 0; }
  kill -TERM "$pid" 2>/dev/null || true
  wait_gone "$pid" "$timeout"
  rm -f "$dir/$pidname"
}

# check_zone <zone>: die unless zone is a plain zone name (letters, digits, _ . -).
check_zone() {
  [[ $1 =~ ^[A-Za-z0-9_.-]+$ ]] || die "bad zone name: $1"
}

# check_ports <port>...: die naming the first argument that is no valid port (valid_port).
check_ports() {
  local p
  for p in "$@"; do
    valid_port "$p" || die "bad port: $p"
  done
}

# check_secondary <port> <primary-port> <source> <primary-ip>: what a secondary's start checks of
# its arguments: two valid ports, an IPv4 primary and a loopback IPv4 source.
check_secondary() {
  check_ports "$1" "$2"
  [[ $3 =~ ^127\.[0-9.]+$ && $4 =~ ^[0-9.]+$ ]] || die "bad address: $3 or $4 (IPv4, $3 on loopback)"
}

# read_tsig_key: split TSIG_KEY=<name>:<algorithm>:<base64 secret> into TSIG_NAME, TSIG_ALG and
# TSIG_SECRET, dying when one is malformed; return 1 (and set nothing) when TSIG_KEY is unset.
read_tsig_key() {
  [ -n "${TSIG_KEY:-}" ] || return 1
  IFS=: read -r TSIG_NAME TSIG_ALG TSIG_SECRET <<<"$TSIG_KEY"
  [[ $TSIG_NAME =~ ^[A-Za-z0-9_.-]+$ && $TSIG_ALG =~ ^hmac-sha[0-9]+$ && $TSIG_SECRET =~ ^[A-Za-z0-9+/=]+$ ]] ||
    die "bad TSIG_KEY (name:algorithm:base64)"
}

# dispatch <action> <args...>: run the script's cmd_<action> with args; usage when there is no
# action or the script has no such command.
dispatch() {
  [ $# -ge 1 ] || usage
  local action=$1
  shift
  declare -F "cmd_$action" >/dev/null || usage
  "cmd_$action" "$@"
}
