# shellcheck shell=bash
# Sourced by scripts/control-plane.sh: supervising the instance's processes (COMPONENTS), each
# known by its pid file in $STATE/run and its command line, logging to $STATE/logs. How each one
# is started is in components.sh. Uses log/die from the caller.

# pid_of NAME: print the pid of our running NAME, or fail. The pid file alone is
# not enough: after a reboot or a crash the pid may belong to something else.
# The stand-in operators are a Python module, known by their command line (tests.operators is its
# name before it moved to standins/: a control plane started then is still stopped).
pid_of() {
  local pidfile=$STATE/run/$1.pid pid cmdline argv0
  [[ -f $pidfile ]] || return 1
  pid=$(<"$pidfile")
  cmdline=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") || return 1
  argv0=${cmdline%% *}
  if [[ $1 == kgf-stand-in-operators ]]; then
    [[ $cmdline == *" -m standins.operators "* || $cmdline == *" -m tests.operators "* ]] || return 1
  else
    [[ ${argv0##*/} == "$1" ]] || return 1
  fi
  echo "$pid"
}

# start NAME ARGS...: start $BIN/NAME in its own session (so a Ctrl-C in the
# calling terminal does not reach it), logging to $STATE/logs/NAME.log.
start() {
  local name=$1
  shift
  pid_of "$name" >/dev/null && return
  setsid "$BIN/$name" "$@" >>"$STATE/logs/$name.log" 2>&1 </dev/null &
  started "$name" $!
}

# started NAME PID: record PID as NAME's and return once it runs NAME. Until the background job has
# exec'd setsid and then NAME, its command line is this shell's or setsid's, and pid_of (so
# check_alive) would take a component still starting for one that exited: on two busy cores, with
# three instances starting side by side, that window was long enough to fail a start. At most 5 s:
# one that exits at once is reported by check_alive, with its log.
started() {
  echo "$2" >"$STATE/run/$1.pid"
  local _
  for _ in {1..500}; do
    pid_of "$1" >/dev/null && return
    sleep 0.01
  done
}

stop() {
  local name=$1 pid
  if pid=$(pid_of "$name"); then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in {1..100}; do
      pid_of "$name" >/dev/null || break
      sleep 0.1
    done
    if pid_of "$name" >/dev/null; then
      log "$name did not stop within 10s; killing it"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$STATE/run/$name.pid"
}

# Fail fast, with its log, when a component we started has died.
check_alive() {
  local name
  for name in "${COMPONENTS[@]}"; do
    if [[ -f $STATE/run/$name.pid ]] && ! pid_of "$name" >/dev/null; then
      tail -n 30 "$STATE/logs/$name.log" >&2 || true
      die "$name exited; log: $STATE/logs/$name.log"
    fi
  done
}

# wait_for WHAT SECONDS COMMAND...: retry COMMAND until it succeeds.
wait_for() {
  local what=$1 deadline=$((SECONDS + $2))
  shift 2
  until "$@" >/dev/null 2>&1; do
    check_alive
    ((SECONDS < deadline)) || die "timed out after $2s waiting for $what"
    sleep 0.5
  done
}

all_running() {
  local name
  for name in "${COMPONENTS[@]}"; do pid_of "$name" >/dev/null || return 1; done
}

# A component that died while nobody watched (a reboot, the OOM killer) is
# started again, not reported as having just exited.
forget_the_dead() {
  local name
  for name in "${COMPONENTS[@]}"; do
    if [[ -f $STATE/run/$name.pid ]] && ! pid_of "$name" >/dev/null; then
      log "$name is not running (last log: $STATE/logs/$name.log); starting it again"
      rm -f "$STATE/run/$name.pid"
    fi
  done
}
