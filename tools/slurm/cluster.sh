#!/usr/bin/env bash
# A private one-host Slurm cluster: `cluster.sh start DIR` writes DIR/slurm.conf (two emulated
# nodes n1 and n2 of 8 fake GPUs each, every daemon on 127.0.0.1 on free ports, its own munged
# socket), starts munged, slurmctld and two slurmd, waits until both nodes are idle and prints
# DIR/slurm.conf (export SLURM_CONF=... to use it). `cluster.sh stop DIR` cancels every job,
# stops the daemons and waits for them to end. Facts and pitfalls: docs/slurm.md.
# Needs root (slurmd runs jobs as their user) and the packages of tools/slurm/setup.sh.
set -euo pipefail
cmd="${1:?usage: cluster.sh start|stop DIR}"
T="$(realpath -m "${2:?usage: cluster.sh start|stop DIR}")"
CPUS="${TUIAPP_SLURM_CPUS:-2}"

pids() { cat "$T"/*.pid 2>/dev/null || true; }

stop() {
  if [ -f "$T/slurm.conf" ]; then
    SLURM_CONF="$T/slurm.conf" scancel --full --quiet --user=root 2>/dev/null || true
    SLURM_CONF="$T/slurm.conf" scontrol shutdown >/dev/null 2>&1 || true
  fi
  for _ in $(seq 50); do  # slurmd ends its jobs' steps before it exits
    live=""
    for p in $(pids); do kill -0 "$p" 2>/dev/null && live="$live $p"; done
    [ -z "$live" ] && break
    sleep 0.2
  done
  for p in $(pids); do kill -9 "$p" 2>/dev/null || true; done
  rm -f "$T"/*.pid
  if [ -f "$T/munge_dir" ]; then rm -rf "$(cat "$T/munge_dir")" "$T/munge_dir"; fi
}

if [ "$cmd" = stop ]; then stop; exit 0; fi
[ "$cmd" = start ] || { echo "usage: cluster.sh start|stop DIR" >&2; exit 2; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
mkdir -p "$T/state" "$T/spool" "$T/log"
# munged runs as user munge: its directory lies outside DIR (a test's tmp dir is root's alone),
# searchable by all (munged checks) and short (a socket path has 108 bytes at most)
M="$(mktemp -d /tmp/tuiapp-munge.XXXXXX)"
echo "$M" > "$T/munge_dir"
chown munge:munge "$M"; chmod 755 "$M"
H="$(hostname)"
cat > "$T/slurm.conf" <<CONF
ClusterName=tuiapp
SlurmctldHost=$H(127.0.0.1)
AuthType=auth/munge
AuthInfo=socket=$M/munge.sock
CredType=cred/munge
SlurmUser=root
SlurmctldPort=$(free_port)
SlurmdPort=$(free_port)
StateSaveLocation=$T/state
SlurmdSpoolDir=$T/spool/%n
SlurmctldPidFile=$T/slurmctld.pid
SlurmdPidFile=$T/slurmd-%n.pid
SlurmctldLogFile=$T/log/slurmctld.log
SlurmdLogFile=$T/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
# the emulated nodes may claim more CPUs than this host has (TUIAPP_SLURM_CPUS): take the config as it is
SlurmdParameters=config_overrides
GresTypes=gpu
MinJobAge=600
KillWait=5
JobCompType=jobcomp/filetxt
JobCompLoc=$T/jobcomp.log
NodeName=n1 NodeHostname=$H NodeAddr=127.0.0.1 Port=$(free_port) CPUs=$CPUS RealMemory=4000 Gres=gpu:8
NodeName=n2 NodeHostname=$H NodeAddr=127.0.0.1 Port=$(free_port) CPUs=$CPUS RealMemory=4000 Gres=gpu:8
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
CONF
# fake GPUs: gres needs character devices (plain files are refused); 1,3 is /dev/null
for n in n1 n2; do for i in 0 1 2 3 4 5 6 7; do
  [ -e "$T/$n-gpu$i" ] || mknod "$T/$n-gpu$i" c 1 3
done; done
printf 'NodeName=n1 Name=gpu File=%s/n1-gpu[0-7]\nNodeName=n2 Name=gpu File=%s/n2-gpu[0-7]\n' "$T" "$T" > "$T/gres.conf"
export SLURM_CONF="$T/slurm.conf"
su -s /bin/sh munge -c "/usr/sbin/munged --socket=$M/munge.sock --pid-file=$M/munged.pid --log-file=$M/munged.log --seed-file=$M/seed"
cp "$M/munged.pid" "$T/munged.pid"
slurmctld -f "$T/slurm.conf"
slurmd -f "$T/slurm.conf" -N n1
slurmd -f "$T/slurm.conf" -N n2
for _ in $(seq 100); do
  if [ "$(sinfo -h -N -o '%t' 2>/dev/null | sort -u | tr -d '\n')" = idle ]; then
    echo "$T/slurm.conf"; exit 0
  fi
  sleep 0.2
done
echo "slurm did not come up in 20 s: sinfo says $(sinfo -h -N -o '%N %t %E' 2>&1 | tr '\n' ';'); logs in $T/log" >&2
stop
exit 1
