"""A trial's batch script: sbatch options, the allocation's facts for every node, the server
step, the optional GPU agent step, and the two ways tuiapp ends a job it no longer needs.

Files in the trial's job directory (on a filesystem every node shares):

- ``job.sh`` (this script), ``node.sh`` (what each node runs), ``batch.log`` (the script's output)
- ``endpoint.json``: head node, its address, the HTTP port, every node (written before the step)
- ``node-NAME.log``: one node's server log; ``gpus-NAME.jsonl``: its GPU samples (the agent)
- ``stop``: tuiapp asks for a clean end (SIGTERM to the server, exit 0: COMPLETED)
- ``lease``: a counter tuiapp rewrites every few seconds; a job that sees it unchanged for
  ``[slurm] lease_s`` (by the node's own clock: no skew between hosts matters) cancels itself,
  so a tuiapp killed with SIGKILL, or a host that lost power, leaves nothing running.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from tuiapp.slurm.launcher import node_command
from tuiapp.trials.slurm_spec import SlurmSpec

WATCH_S = 1  # how often the script looks for the stop file
ENDPOINT_COMMENT = "tuiapp-endpoint:"


@dataclass(frozen=True)
class JobFiles:
    dir: Path

    @property
    def script(self) -> Path:
        return self.dir / "job.sh"

    @property
    def node_script(self) -> Path:
        return self.dir / "node.sh"

    @property
    def batch_log(self) -> Path:
        return self.dir / "batch.log"

    @property
    def endpoint(self) -> Path:
        return self.dir / "endpoint.json"

    @property
    def stop(self) -> Path:
        return self.dir / "stop"

    @property
    def lease(self) -> Path:
        return self.dir / "lease"

    def node_log(self, node: str) -> Path:
        return self.dir / f"node-{node}.log"

    def gpu_samples(self, node: str) -> Path:
        return self.dir / f"gpus-{node}.jsonl"


def safe_name(trial: str) -> str:
    """A trial's name as a file and job name: a plan may name trials anything."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", trial)[:80]


def sbatch_options(spec: SlurmSpec, job_name: str, files: JobFiles) -> list[str]:
    # without a shared filesystem the job's directory is not on the head: its own /tmp then
    batch_log = files.batch_log if spec.shared_fs else "/tmp/tuiapp-%j.batch.log"
    opts = [f"--job-name={job_name}", f"--nodes={spec.nodes}", "--ntasks-per-node=1", f"--output={batch_log}"]
    if spec.gpus_per_node:
        opts.append(f"--gres=gpu:{spec.gpus_per_node}")
    if spec.partition:
        opts.append(f"--partition={spec.partition}")
    if spec.account:
        opts.append(f"--account={spec.account}")
    if spec.time_limit:
        opts.append(f"--time={spec.time_limit}")
    return [*opts, *spec.sbatch_options]


def node_script(argv: list[str], spec: SlurmSpec, files: JobFiles) -> str:
    """What each node runs; $D, the job's directory (shared, or this node's own), comes from job.sh."""
    return ("#!/bin/bash\n# one node of a tuiapp trial: its server process, its log under its node's name\n"
            'mkdir -p "$D"\n'
            'exec >"$D"/node-"$SLURMD_NODENAME".log 2>&1\n'
            f"exec {node_command(argv, spec.nodes, spec.launcher)}\n")


def node_dir_text() -> str:
    """Without a shared filesystem: each node's own directory for the job (logs, endpoint)."""
    return "/tmp/tuiapp-$SLURM_JOB_ID"


def batch_script(argv: list[str], env: dict[str, str], spec: SlurmSpec, files: JobFiles, *,
                 job_name: str, agent_argv: list[str] | None = None) -> str:
    """The whole ``job.sh``; ``agent_argv``: the GPU sampler each node runs beside the server.
    Without a shared filesystem (``shared_fs = false``) the node script travels inside it, each
    node keeps its files in its own /tmp/tuiapp-JOB, and the endpoint goes out as the job's
    Comment (``tuiapp-endpoint:{...}``), which squeue prints."""
    node_script_text = node_script(argv, spec, files)
    shared = spec.shared_fs
    lines = ["#!/bin/bash", "# written by tuiapp trials --slurm (docs/slurm.md)"]
    lines += [f"#SBATCH {shlex.quote(o)}" for o in sbatch_options(spec, job_name, files)]
    lines += [
        "set -u",
        f"export D={shlex.quote(str(files.dir)) if shared else node_dir_text()}",
        'mkdir -p "$D"',
        # tuiapp's request for a clean end where it cannot write the stop file: scancel --batch --signal=USR1
        "stop=0",
        "trap 'stop=1' USR1",
        'nodes=$(scontrol show hostnames "$SLURM_JOB_NODELIST")',
        'head=$(echo "$nodes" | head -n 1)',
        # NodeAddr, not the name: emulated nodes (and some sites) have names that do not resolve
        "head_addr=$(scontrol show node -o \"$head\" | tr ' ' '\\n' | sed -n 's/^NodeAddr=//p')",
        '[ -n "$head_addr" ] || head_addr=$head',
        "free_port() { python3 -c 'import socket; s = socket.socket(); s.bind((\"\", 0)); print(s.getsockname()[1])'; }",
        f"port={spec.port}" if spec.port else "port=$(free_port)",
        "dist_port=$(free_port)",
        'export TUIAPP_HEAD="$head" TUIAPP_HEAD_ADDR="$head_addr" TUIAPP_PORT="$port" '
        'TUIAPP_DIST_PORT="$dist_port" TUIAPP_NNODES="$SLURM_JOB_NUM_NODES"',
    ]
    lines += [f"export {k}={shlex.quote(v)}" for k, v in env.items()]
    lines += [
        "node_list=$(echo $nodes | sed 's/ /\",\"/g')",
        'printf \'{"job_id": "%s", "head": "%s", "head_addr": "%s", "port": %s, "dist_port": %s, '
        '"nodes": ["%s"], "dir": "%s"}\\n\' "$SLURM_JOB_ID" "$head" "$head_addr" "$port" "$dist_port" "$node_list" "$D" '
        '> "$D/endpoint.json.tmp" && mv "$D/endpoint.json.tmp" "$D/endpoint.json"',
    ]
    if not shared:  # the submitting host reads it where it reads the job's state
        lines.append(f'scontrol update JobId="$SLURM_JOB_ID" Comment="{ENDPOINT_COMMENT}$(cat "$D/endpoint.json")"')
    if agent_argv:
        agent = shlex.join(agent_argv)
        lines.append("srun --overlap --ntasks-per-node=1 --kill-on-bad-exit=0 bash -c "
                     + shlex.quote(f'mkdir -p "$D"; exec {agent} > "$D"/gpus-"$SLURMD_NODENAME".jsonl 2>/dev/null')
                     + " &")
    # one task per node; a node that dies takes the step down (the others would wait on it)
    step = 'bash "$D/node.sh"' if shared else "bash -c " + shlex.quote(node_script_text)
    lines += [
        f"srun --ntasks-per-node=1 --kill-on-bad-exit=1 {step} &",
        "step=$!",
    ]
    if shared:
        lines.append('lease=$(cat "$D/lease" 2>/dev/null); lease_at=$(date +%s)')
    lines += [
        'while kill -0 "$step" 2>/dev/null; do',
        '  if [ -e "$D/stop" ] || [ "$stop" = 1 ]; then kill -TERM "$step"; wait "$step"; exit 0; fi',
    ]
    if shared:
        lines += [
            '  now_lease=$(cat "$D/lease" 2>/dev/null)',
            '  if [ "$now_lease" != "$lease" ]; then lease=$now_lease; lease_at=$(date +%s); fi',
            f'  if [ $(( $(date +%s) - lease_at )) -gt {spec.lease_s} ]; then',
            '    echo "tuiapp: no word from the submitting tuiapp for a while: cancelling"; scancel "$SLURM_JOB_ID"; fi',
        ]
    lines += [
        f"  sleep {WATCH_S}",
        "done",
        'wait "$step"',
        "code=$?",
        'echo "tuiapp: the server step ended with code $code"',
        'exit "$code"',
    ]
    return "\n".join(lines) + "\n"
