#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, from Debian's packages, for Compile Lab's Slurm tests.
#
#   scripts/slurm_local.sh up      install (as root, when missing) slurmctld, slurmd,
#                                  slurm-client and munge; write /etc/slurm/slurm.conf; start
#                                  munged, slurmctld and slurmd; exit 0 once sinfo shows the
#                                  node idle.  Idempotent: a cluster already up is left as it is.
#   scripts/slurm_local.sh down    stop slurmd, slurmctld and munged (idempotent).
#   scripts/slurm_local.sh status  sinfo's view, or exit 1 when the controller does not answer.
#
# Made for a container without systemd or cgroups (CI, dev machines): processes are tracked
# by parentage (proctrack/linuxproc) and tasks are not bound (task/none), so nothing needs a
# cgroup hierarchy; no accounting database (sacct has nothing to say here: Compile Lab reads
# job states from the controller).  One partition, `debug`, holds the node with all its CPUs.
# Needs root: it writes /etc/slurm and starts daemons.  It refuses to overwrite a slurm.conf it
# did not write, so it never clobbers a real cluster's node.
set -euo pipefail

MARK="# written by Compile Lab scripts/slurm_local.sh"
CONF=/etc/slurm/slurm.conf
STATE=${COMPILELAB_SLURM_LOCAL_STATE:-/var/lib/compilelab-slurm}
RUN=/run/compilelab-slurm
LOGS=/var/log/compilelab-slurm
PACKAGES=(slurmctld slurmd slurm-client munge)
WAIT_S=${COMPILELAB_SLURM_LOCAL_WAIT_S:-90}

log() { echo "[slurm_local] $*" >&2; }
die() { echo "[slurm_local] error: $*" >&2; exit 1; }

need_root() {
    [[ $(id -u) -eq 0 ]] || die "run as root (it writes $CONF and starts slurmctld, slurmd, munged)"
}

install_packages() {
    local missing=()
    for pkg in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
            missing+=("$pkg")
    done
    ((${#missing[@]})) || return 0
    log "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q
    apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
}

pid_alive() { [[ -s $1 ]] && kill -0 "$(cat "$1")" 2>/dev/null; }

node_state() { timeout 10 sinfo -h -N -o '%t' 2>/dev/null | head -n1; }

start_munge() {
    install -d -o munge -g munge -m 0755 /run/munge
    install -d -o munge -g munge -m 0700 /var/lib/munge /var/log/munge
    if [[ ! -s /etc/munge/munge.key ]]; then
        log "creating a munge key"
        mungekey --create --keyfile=/etc/munge/munge.key
        chown munge:munge /etc/munge/munge.key
        chmod 0400 /etc/munge/munge.key
    fi
    if pid_alive /run/munge/munged.pid; then
        return 0
    fi
    log "starting munged"
    runuser -u munge -- /usr/sbin/munged --force
    munge -n | unmunge >/dev/null || die "munge does not work (munge -n | unmunge failed)"
}

write_conf() {
    if [[ -f $CONF ]] && ! grep -qF "$MARK" "$CONF"; then
        die "$CONF exists and was not written by this script: not touching a real cluster's node"
    fi
    local host cpus mem_mb
    host=$(hostname -s)
    cpus=$(nproc)
    # Leave some memory to the system; slurmd refuses a node claiming more than it has.
    mem_mb=$(($(awk '/^MemTotal:/ {print $2}' /proc/meminfo) / 1024 * 9 / 10))
    install -d -o slurm -g slurm -m 0755 "$STATE" "$STATE/ctld" "$LOGS"
    install -d -m 0755 "$STATE/d" "$RUN"
    cat >"$CONF" <<EOF
$MARK
ClusterName=compilelab
SlurmctldHost=$host(127.0.0.1)
SlurmUser=slurm
AuthType=auth/munge
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd.pid
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd.log
# no systemd, no cgroups: track processes by parentage, do not bind tasks
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/backfill
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
# a job past its limit gets SIGTERM, then SIGKILL after KillWait seconds
KillWait=10
# ended jobs stay visible to squeue/scontrol for 5 minutes
MinJobAge=300
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
}

up() {
    need_root
    if [[ $(node_state) == idle* || $(node_state) == mix* || $(node_state) == alloc* ]]; then
        log "already up: $(sinfo -h -N -o '%N %t' | head -n1)"
        return 0
    fi
    install_packages
    write_conf
    start_munge
    if ! pid_alive "$RUN/slurmctld.pid"; then
        log "starting slurmctld"
        # -c: a clean start (no jobs left from an earlier cluster of this script)
        slurmctld -c
    fi
    if ! pid_alive "$RUN/slurmd.pid"; then
        log "starting slurmd"
        slurmd
    fi
    local deadline=$((SECONDS + WAIT_S)) state=""
    while ((SECONDS < deadline)); do
        state=$(node_state)
        if [[ $state == idle* ]]; then
            log "up: $(sinfo -h -N -o '%N %P %c CPUs %t' | head -n1)"
            return 0
        fi
        if [[ $state == down* || $state == drain* ]]; then
            scontrol update nodename="$(hostname -s)" state=resume >/dev/null 2>&1 || true
        fi
        sleep 1
    done
    log "the node is not idle after ${WAIT_S}s (state: ${state:-no answer}); last log lines:"
    tail -n 20 "$LOGS/slurmctld.log" "$LOGS/slurmd.log" >&2 || true
    exit 1
}

stop_pidfile() {
    local name=$1 file=$2
    pid_alive "$file" || return 0
    local pid
    pid=$(cat "$file")
    log "stopping $name (pid $pid)"
    kill "$pid" 2>/dev/null || true
    for _ in $(seq 1 50); do
        kill -0 "$pid" 2>/dev/null || return 0
        sleep 0.2
    done
    kill -9 "$pid" 2>/dev/null || true
}

down() {
    need_root
    stop_pidfile slurmd "$RUN/slurmd.pid"
    stop_pidfile slurmctld "$RUN/slurmctld.pid"
    stop_pidfile munged /run/munge/munged.pid
    log "down"
}

status() {
    if ! timeout 10 sinfo -N -o '%N %P %c %t' 2>/dev/null; then
        echo "no Slurm controller answers" >&2
        exit 1
    fi
}

case "${1:-}" in
up) up ;;
down) down ;;
status) status ;;
*)
    echo "usage: $0 up|down|status" >&2
    exit 2
    ;;
esac
