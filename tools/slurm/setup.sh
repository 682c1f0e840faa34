#!/usr/bin/env bash
# A real Slurm for the `slurm` test tier, installed the way a user on Debian would: Debian's
# own packages (slurm-wlm 22.05.8 on bookworm) and munge. Prints slurmctld's path last (the
# tier's variable: TUIAPP_SLURM="$(tools/slurm/setup.sh)"). Idempotent. Needs root (CI runs as
# root). The packages' services are not used: tools/slurm/cluster.sh starts a private cluster
# (its own munged socket, loopback ports) in a directory and stops it again; the tier's tests
# do that themselves (tests/test_slurm_real.py), so every daemon ends with the test run.
set -euo pipefail
if ! command -v slurmctld >/dev/null 2>&1 || ! command -v slurmd >/dev/null 2>&1 \
   || ! command -v sbatch >/dev/null 2>&1 || ! command -v munged >/dev/null 2>&1; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >&2
  apt-get install -y -qq --no-install-recommends slurmctld slurmd slurm-client munge >&2
fi
test -s /etc/munge/munge.key || { echo "no /etc/munge/munge.key (the munge package makes it)" >&2; exit 1; }
slurmctld -V >&2
command -v slurmctld
