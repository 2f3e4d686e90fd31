#!/usr/bin/env bash
# Installs (once) and starts a real one-machine Slurm for the tests: Debian's slurmctld, slurmd,
# slurm-client and munge (apt-get; needs root), with slurmctld and slurmd on 127.0.0.1, one node
# `localhost` with 4 task slots, one partition `debug`. Its configuration, state and logs live in
# target/slurm/ (nothing in /etc/slurm is touched; munge uses the key its package made).
# Prints the environment the tests need as `export` lines.
# Usage: eval "$(scripts/ci/slurm-server.sh start)"; scripts/ci/slurm-server.sh stop
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dir="$root/target/slurm"
conf="$dir/slurm.conf"
packages=(slurmctld slurmd slurm-client munge)

need_install() {
    for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || return 0
    done
    return 1
}

case "${1:-start}" in
start)
    if need_install; then
        if [ "$(id -u)" != 0 ]; then
            echo "installing ${packages[*]} needs root (apt-get)" >&2
            exit 1
        fi
        echo "installing ${packages[*]} (apt-get)" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -q --no-install-recommends "${packages[@]}" >&2 || {
            apt-get update -q >&2
            apt-get install -y -q --no-install-recommends "${packages[@]}" >&2
        }
    fi
    "$0" stop >/dev/null 2>&1 || true
    mkdir -p "$dir/state" "$dir/spool" /run/munge
    chown munge:munge /run/munge 2>/dev/null || true
    # munge: the key its package generated (or a fresh one), the daemon on its usual socket.
    if [ ! -s /etc/munge/munge.key ]; then
        mungekey --create --keyfile=/etc/munge/munge.key >&2 2>/dev/null ||
            dd if=/dev/urandom of=/etc/munge/munge.key bs=128 count=1 status=none
        chown munge:munge /etc/munge/munge.key
        chmod 600 /etc/munge/munge.key
    fi
    if ! munge -n </dev/null >/dev/null 2>&1; then
        if id munge >/dev/null 2>&1; then
            su -s /bin/sh munge -c "/usr/sbin/munged" >&2 || /usr/sbin/munged --force >&2
        else
            /usr/sbin/munged --force >&2
        fi
    fi
    for _ in $(seq 1 50); do munge -n </dev/null >/dev/null 2>&1 && break; sleep 0.1; done
    munge -n </dev/null | unmunge >/dev/null || {
        echo "munged did not start" >&2
        exit 1
    }
    cat >"$conf" <<CONF
ClusterName=epimine-test
SlurmctldHost=localhost(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
SlurmctldPort=6817
SlurmdPort=6818
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
ReturnToService=2
SlurmdParameters=config_overrides
NodeName=localhost NodeAddr=127.0.0.1 CPUs=4 State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
CONF
    /usr/sbin/slurmctld -f "$conf" -i >&2
    /usr/sbin/slurmd -f "$conf" -N localhost >&2
    export SLURM_CONF="$conf"
    up=
    for _ in $(seq 1 150); do
        if sinfo -h -N -o '%T' 2>/dev/null | grep -qE '^(idle|mixed|allocated)'; then
            up=1
            break
        fi
        sleep 0.2
    done
    if [ -z "$up" ]; then
        echo "Slurm did not come up (node state: $(sinfo -h -N -o '%T %E' 2>&1)); see $dir/*.log" >&2
        exit 1
    fi
    cat <<ENV
export SLURM_CONF=$conf
export EPIMINE_TEST_SLURM=$conf
ENV
    ;;
stop)
    for pid in "$dir/slurmd.pid" "$dir/slurmctld.pid"; do
        if [ -f "$pid" ]; then
            kill "$(cat "$pid")" 2>/dev/null || true
            rm -f "$pid"
        fi
    done
    ;;
*)
    echo "usage: $0 start|stop" >&2
    exit 2
    ;;
esac
