#!/usr/bin/env bash
# A real one-node Slurm cluster on this machine (CPUs only), for tests that submit through the
# real sbatch. Debian's slurm-wlm and munge, installed when missing; every file of the cluster
# (slurm.conf, munge key and socket, state, spool, logs, pid files) lives in one state dir,
# $KP_SLURM_DIR (default /tmp/kp-slurm), so it touches nothing of a system Slurm.
#
#   scripts/slurm_localhost.sh start    install if needed, start munged, slurmctld, slurmd; wait
#                                       for the node to be idle; print the line to eval:
#                                         eval "$(scripts/slurm_localhost.sh start)"
#                                       (only that line goes to stdout; the rest goes to stderr)
#   scripts/slurm_localhost.sh stop     stop the daemons it started
#   scripts/slurm_localhost.sh status   say what runs; exit 0 when the node answers
#
# Running start again while the cluster runs only reports (and prints the export line again).
# Exits non-zero, saying why, when the cluster cannot be made to work here (no apt, a container
# without the privileges the daemons need, ...), so a test can report itself as skipped.
# Environment: KP_SLURM_DIR (state dir), KP_SLURM_PORT (slurmctld's port, default 6817; slurmd
# takes the next one), KP_SLURM_TIMEOUT (seconds to wait for the node, default 60).
set -uo pipefail

D=${KP_SLURM_DIR:-/tmp/kp-slurm}
PORT=${KP_SLURM_PORT:-6817}
TIMEOUT=${KP_SLURM_TIMEOUT:-60}
CONF=$D/slurm.conf
MUNGE_SOCKET=$D/munge/munge.socket.2
SUDO=(); [ "$(id -u)" -ne 0 ] && SUDO=(sudo)

say() { echo "slurm_localhost: $*" >&2; }
die() { say "FAILED: $*"; exit 1; }

# Slurm's sbin is not on every PATH.
export PATH="$PATH:/usr/sbin:/sbin"
export SLURM_CONF=$CONF

alive() {  # alive PIDFILE NAME: the process of that pid file is running and is NAME
  local pid
  [ -r "$1" ] || return 1
  pid=$(cat "$1" 2>/dev/null) || return 1
  [ -n "$pid" ] && [ -d "/proc/$pid" ] || return 1
  grep -q "$2" "/proc/$pid/comm" 2>/dev/null || grep -qa "$2" "/proc/$pid/cmdline" 2>/dev/null
}

node_name() { hostname -s; }

node_state() {  # the node's state as sinfo sees it (idle, mix, idle* = not responding, ...); empty when slurmctld does not answer
  timeout 10 sinfo -h -N -n "$(node_name)" -o %t 2>/dev/null | head -1
}

print_logs() {
  local f
  for f in "$D/log/munged.log" "$D/log/slurmctld.log" "$D/log/slurmd.log"; do
    [ -r "$f" ] || continue
    echo "----- last lines of $f -----" >&2
    tail -n 25 "$f" >&2
  done
}

install_packages() {
  local missing=() p
  for p in slurm-wlm munge; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if ((${#missing[@]})) || ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    command -v apt-get >/dev/null || die "slurm-wlm and munge are not installed and there is no apt-get to install them"
    say "installing ${missing[*]:-slurm-wlm munge} (apt-get)"
    local log="${TMPDIR:-/tmp}/kp-slurm-apt.log"
    local install=("${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends
                   -o Dpkg::Use-Pty=0 slurm-wlm munge)
    # The package lists as they are first; apt-get update only when that fails (none, or stale).
    if ! "${install[@]}" >"$log" 2>&1; then
      "${SUDO[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq >>"$log" 2>&1
      "${install[@]}" >>"$log" 2>&1 || { tail -n 20 "$log" >&2; die "apt-get install slurm-wlm munge failed (log: $log)"; }
    fi
  fi
  local b
  for b in slurmctld slurmd munged munge sbatch squeue scancel scontrol sinfo; do
    command -v "$b" >/dev/null || die "$b is missing after installing slurm-wlm and munge"
  done
}

ensure_hostname_resolves() {
  local h; h=$(node_name)
  [ -n "$h" ] || die "hostname -s says nothing"
  getent hosts localhost >/dev/null || die "localhost does not resolve (getent hosts localhost)"
  if ! getent hosts "$h" >/dev/null; then
    say "$h does not resolve; adding '127.0.0.1 $h' to /etc/hosts"
    echo "127.0.0.1 $h" | "${SUDO[@]}" tee -a /etc/hosts >/dev/null || die "cannot make $h resolve (/etc/hosts not writable)"
    getent hosts "$h" >/dev/null || die "$h still does not resolve"
  fi
}

write_config() {
  local h cpus mem_mb hw
  h=$(node_name)
  # The CPUs and their layout as slurmd finds them (so it does not complain of a different
  # layout); the CPU count of nproc where slurmd -C says nothing.
  hw=$(slurmd -C 2>/dev/null | head -1 | grep -o 'CPUs=[0-9]* Boards=[0-9]* SocketsPerBoard=[0-9]* CoresPerSocket=[0-9]* ThreadsPerCore=[0-9]*')
  cpus=${hw:-CPUs=$(nproc)}
  # Half the memory, so slurmd never finds less than configured (which drains the node).
  mem_mb=$(awk '/^MemTotal:/ {printf "%d", $2 / 1024 / 2}' /proc/meminfo)
  [ "${mem_mb:-0}" -ge 100 ] 2>/dev/null || mem_mb=100
  "${SUDO[@]}" mkdir -p "$D"/{state,spool,log,run,munge}
  "${SUDO[@]}" chmod 0755 "$D" "$D"/{state,spool,log,run,munge}
  "${SUDO[@]}" tee "$CONF" >/dev/null <<EOF
# Written by scripts/slurm_localhost.sh: a one-node cluster on $h, CPUs only.
ClusterName=kplocal
SlurmctldHost=localhost
SlurmctldPort=$PORT
SlurmdPort=$((PORT + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET
CredType=cred/munge
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/run/slurmctld.pid
SlurmdPidFile=$D/run/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SwitchType=switch/none
MailProg=/bin/true
ReturnToService=2
MaxArraySize=100001
MaxJobCount=200000
MinJobAge=300
KillWait=5
InactiveLimit=0
SlurmctldTimeout=30
SlurmdTimeout=60
NodeName=$h $cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=$h Default=YES MaxTime=INFINITE State=UP
EOF
  "${SUDO[@]}" chmod 0644 "$CONF"
}

start_munged() {
  if alive "$D/run/munged.pid" munged; then return 0; fi
  if [ ! -s "$D/munge/munge.key" ]; then
    "${SUDO[@]}" sh -c "umask 077; dd if=/dev/urandom of='$D/munge/munge.key' bs=1 count=1024 2>/dev/null" \
      || die "cannot create the munge key $D/munge/munge.key"
  fi
  "${SUDO[@]}" chmod 0400 "$D/munge/munge.key"
  "${SUDO[@]}" rm -f "$MUNGE_SOCKET" "$MUNGE_SOCKET.lock"
  # munged runs as root here (-f: it would rather not); key, socket, pid, log and seed all in $D.
  "${SUDO[@]}" munged -f --key-file="$D/munge/munge.key" --socket="$MUNGE_SOCKET" \
    --pid-file="$D/run/munged.pid" --log-file="$D/log/munged.log" --seed-file="$D/munge/munged.seed" \
    >>"$D/log/start.log" 2>&1 || { print_logs; die "munged did not start (see above)"; }
  local i
  for i in $(seq 50); do [ -S "$MUNGE_SOCKET" ] && break; sleep 0.1; done
  echo test | munge -S "$MUNGE_SOCKET" 2>/dev/null | unmunge -S "$MUNGE_SOCKET" >/dev/null 2>&1 \
    || { print_logs; die "munge does not work (munge | unmunge through $MUNGE_SOCKET failed)"; }
}

start_slurm() {
  if ! alive "$D/run/slurmctld.pid" slurmctld; then
    "${SUDO[@]}" env SLURM_CONF="$CONF" slurmctld -f "$CONF" -i >>"$D/log/start.log" 2>&1 \
      || { cat "$D/log/start.log" >&2; print_logs; die "slurmctld did not start"; }
  fi
  if ! alive "$D/run/slurmd.pid" slurmd; then
    "${SUDO[@]}" env SLURM_CONF="$CONF" slurmd -f "$CONF" >>"$D/log/start.log" 2>&1 \
      || { cat "$D/log/start.log" >&2; print_logs; die "slurmd did not start"; }
  fi
}

wait_for_node() {
  local deadline=$((SECONDS + TIMEOUT)) state="" resumed=0
  while ((SECONDS < deadline)); do
    state=$(node_state)
    case "$state" in
      idle | mix | alloc | comp) return 0 ;;
      down* | drain* | drng* | fail*)
        if ((resumed == 0)) && alive "$D/run/slurmd.pid" slurmd; then
          "${SUDO[@]}" env SLURM_CONF="$CONF" scontrol update NodeName="$(node_name)" State=RESUME >/dev/null 2>&1
          resumed=1
        fi ;;
    esac
    alive "$D/run/slurmctld.pid" slurmctld || { print_logs; die "slurmctld exited; its log is above ($D/log/slurmctld.log)"; }
    alive "$D/run/slurmd.pid" slurmd || { print_logs; die "slurmd exited; its log is above ($D/log/slurmd.log)"; }
    sleep 1
  done
  timeout 10 sinfo -N -l >&2 2>&1 || true
  print_logs
  die "the node $(node_name) is not idle after ${TIMEOUT}s (sinfo says '${state:-nothing}')"
}

stop_daemons() {  # stop_daemons NAME...: SIGTERM to each (all at once), SIGKILL to any still there after 10 s
  local n pid i pids=() names=()
  for n in "$@"; do
    if alive "$D/run/$n.pid" "$n"; then
      pid=$(cat "$D/run/$n.pid")
      "${SUDO[@]}" kill -TERM "$pid" 2>/dev/null
      pids+=("$pid"); names+=("$n")
    else
      "${SUDO[@]}" rm -f "$D/run/$n.pid"
    fi
  done
  for i in "${!pids[@]}"; do
    pid=${pids[$i]}; n=${names[$i]}
    for _ in $(seq 100); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
    if [ -d "/proc/$pid" ]; then
      say "$n ($pid) did not stop on SIGTERM; sending SIGKILL"
      "${SUDO[@]}" kill -KILL "$pid" 2>/dev/null
    fi
    "${SUDO[@]}" rm -f "$D/run/$n.pid"
    say "stopped $n ($pid)"
  done
}

cmd_start() {
  if alive "$D/run/munged.pid" munged && alive "$D/run/slurmctld.pid" slurmctld \
     && alive "$D/run/slurmd.pid" slurmd && [ -n "$(node_state)" ]; then
    say "already running ($D); node $(node_name): $(node_state)"
    echo "export SLURM_CONF=$CONF"
    return 0
  fi
  if [ "${#SUDO[@]}" -gt 0 ] && ! sudo -n true 2>/dev/null; then
    die "the daemons run as root (SlurmUser=root): run this as root or with sudo that asks no password"
  fi
  install_packages
  ensure_hostname_resolves
  # A half-started cluster (one daemon dead) is restarted whole with a fresh configuration.
  if alive "$D/run/slurmctld.pid" slurmctld || alive "$D/run/slurmd.pid" slurmd; then
    stop_daemons slurmd slurmctld
  fi
  local p
  for p in "$PORT" "$((PORT + 1))"; do
    if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then
      die "port $p is taken (another Slurm on this machine?); set KP_SLURM_PORT to another port (slurmctld's; slurmd takes the next)"
    fi
  done
  write_config
  start_munged
  start_slurm
  wait_for_node
  say "running: node $(node_name) $(node_state), $(grep -o 'CPUs=[0-9]*' "$CONF"); state in $D; stop with: $0 stop"
  echo "export SLURM_CONF=$CONF"
}

cmd_stop() {
  stop_daemons slurmd slurmctld
  stop_daemons munged
}

cmd_status() {
  local n ok=0
  for n in munged slurmctld slurmd; do
    if alive "$D/run/$n.pid" "$n"; then say "$n: running (pid $(cat "$D/run/$n.pid"))"; else say "$n: not running"; ok=1; fi
  done
  local state=""
  alive "$D/run/slurmctld.pid" slurmctld && state=$(node_state)  # sinfo retries for seconds when none runs
  if [ -n "$state" ]; then say "node $(node_name): $state"; else say "sinfo: no answer"; ok=1; fi
  [ "$ok" -eq 0 ] && echo "export SLURM_CONF=$CONF"
  return "$ok"
}

case "${1:-}" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  *) echo "usage: $0 start|stop|status   (state dir: \$KP_SLURM_DIR, default /tmp/kp-slurm)" >&2; exit 2 ;;
esac
