"""``tuiapp attach --slurm-job ID``: a job's server URL, node logs and nodes, from Slurm and
from the job's directory.

A job that ``trials --slurm`` submitted has its endpoint.json and node-NAME.log files beside its
batch log: the URL is its head's, every node's log is followed under the node's name (from the
start, so incidents so far are seen). Any other job: its batch log under its batch host's
name, and the URL must be given (``tuiapp attach URL --slurm-job ID``). A job of trials --slurm
without a shared filesystem has its endpoint in its Comment; its node logs are read through
``srun --overlap tail -F`` as ``--log-cmd`` sources.
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

from tuiapp.common.errors import UsageError
from tuiapp.slurm.query import JobInfo, SlurmError, parse_key_values, parse_scontrol_job


def read_job(job_id: str) -> tuple[JobInfo, dict[str, str]]:
    if not job_id.replace("_", "").isdigit():
        raise UsageError(f"--slurm-job {job_id!r}: not a job id")
    try:
        done = subprocess.run(["scontrol", "show", "job", "-o", job_id], capture_output=True, text=True,
                              timeout=30, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        raise UsageError(f"--slurm-job: scontrol: {exc}") from None
    if done.returncode != 0:
        text = (done.stderr or done.stdout).strip().splitlines()
        raise UsageError(f"--slurm-job {job_id}: {text[0] if text else 'scontrol failed'}")
    try:
        return parse_scontrol_job(done.stdout), parse_key_values(done.stdout)
    except SlurmError as exc:
        raise UsageError(f"--slurm-job {job_id}: {exc}") from None


ENDPOINT_WAIT_S = 30.0  # a job of trials --slurm that has just started says its endpoint in a moment


def job_log_sources(job_id: str, url: str | None) -> tuple[str, list[str], list[str], list[str]]:
    """``(url, --log values, --log-cmd values, nodes)`` for a running job. A job of trials --slurm
    (its batch script says so) that has not said its endpoint yet is waited for."""
    from tuiapp.slurm.trial import endpoint_from_comment, node_tail_command

    info, record = read_job(job_id)
    if info.state not in ("RUNNING", "COMPLETING"):
        raise UsageError(f"--slurm-job {job_id}: the job is {info.state}, not running")
    deadline = time.monotonic() + (ENDPOINT_WAIT_S if _ours(record.get("Command")) else 0.0)
    while True:
        endpoint = endpoint_from_comment(info)
        if endpoint is not None:  # no shared filesystem: the logs stay on the nodes
            nodes = [str(n) for n in endpoint.get("nodes") or info.nodes]
            cmds = [f"{node}={node_tail_command(info.job_id, node, str(endpoint.get('dir') or ''))}"
                    for node in nodes]
            return url or f"http://{endpoint['head_addr']}:{endpoint['port']}", [], cmds, nodes
        job_dir = Path(info.stdout).parent if info.stdout else None
        endpoint = _endpoint_file(job_dir) if job_dir is not None else None
        if endpoint is not None and str(endpoint.get("job_id")) == info.job_id.split("_")[0]:
            nodes = [str(n) for n in endpoint.get("nodes") or info.nodes]
            logs = [f"{node}={job_dir / f'node-{node}.log'}" for node in nodes]
            return url or f"http://{endpoint['head_addr']}:{endpoint['port']}", logs, [], nodes
        if time.monotonic() >= deadline:
            break
        time.sleep(0.2)
        info, record = read_job(job_id)
    if url is None:
        raise UsageError(f"--slurm-job {job_id}: not a job of trials --slurm (no endpoint in its comment or "
                         f"beside {info.stdout}); give its URL: tuiapp attach URL --slurm-job {job_id}")
    logs = [f"{record.get('BatchHost') or 'batch'}={info.stdout}"] if info.stdout else []
    return url, logs, [], info.nodes


def _ours(script: str | None) -> bool:
    try:
        return script is not None and "written by tuiapp trials --slurm" in Path(script).read_text(encoding="utf-8")
    except OSError:
        return False


def _endpoint_file(job_dir: Path) -> dict | None:
    try:
        return json.loads((job_dir / "endpoint.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def apply_slurm_job(args) -> None:
    """Fill ``args.url``, ``args.log`` and ``args.log_cmd`` of ``tuiapp attach`` from ``--slurm-job``."""
    url, logs, cmds, _nodes = job_log_sources(args.slurm_job, args.url)
    args.url = url
    args.log = [*logs, *args.log]
    args.log_cmd = [*cmds, *args.log_cmd]
    args.log_from_start = args.log_from_start or bool(logs)
