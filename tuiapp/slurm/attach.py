"""``tuiapp attach --slurm-job ID``: a job's server URL, node logs and nodes, from Slurm and
from the job's directory.

A job that ``trials --slurm`` submitted has its endpoint.json and node-NAME.log files beside its
batch log: the URL is its head's, every node's log is followed under the node's name (from the
start, so incidents so far are seen). Any other job: its batch log under its batch host's
name, and the URL must be given (``tuiapp attach URL --slurm-job ID``).
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


def job_sources(job_id: str, url: str | None) -> tuple[str, list[str], list[str]]:
    """``(url, --log values, nodes)`` for a running job; UsageError when there is nothing to attach to."""
    info, record = read_job(job_id)
    if info.state not in ("RUNNING", "COMPLETING"):
        raise UsageError(f"--slurm-job {job_id}: the job is {info.state}, not running")
    job_dir = Path(info.stdout).parent if info.stdout else None
    endpoint = _endpoint(job_dir) if job_dir is not None else None
    if endpoint is not None and str(endpoint.get("job_id")) == info.job_id.split("_")[0]:
        nodes = [str(n) for n in endpoint.get("nodes") or info.nodes]
        url = url or f"http://{endpoint['head_addr']}:{endpoint['port']}"
        return url, [f"{node}={job_dir / f'node-{node}.log'}" for node in nodes], nodes
    if url is None:
        raise UsageError(f"--slurm-job {job_id}: not a job of trials --slurm (no endpoint.json beside "
                         f"{info.stdout}); give its URL: tuiapp attach URL --slurm-job {job_id}")
    logs = [f"{record.get('BatchHost') or 'batch'}={info.stdout}"] if info.stdout else []
    return url, logs, info.nodes


ENDPOINT_WAIT_S = 30.0  # a job of trials --slurm that has just started writes it in a moment


def _endpoint(job_dir: Path) -> dict | None:
    """The job's endpoint.json; for a job of trials --slurm (its job.sh says so) that has not
    written it yet, waited for."""
    try:
        ours = "written by tuiapp trials --slurm" in (job_dir / "job.sh").read_text(encoding="utf-8")
    except OSError:
        ours = False
    deadline = time.monotonic() + (ENDPOINT_WAIT_S if ours else 0.0)
    while True:
        try:
            return json.loads((job_dir / "endpoint.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            if time.monotonic() >= deadline:
                return None
        time.sleep(0.1)


def apply_slurm_job(args) -> None:
    """Fill ``args.url`` and ``args.log`` of ``tuiapp attach`` from ``--slurm-job``."""
    url, logs, _nodes = job_sources(args.slurm_job, args.url)
    args.url = url
    args.log = [*logs, *args.log]
    args.log_from_start = args.log_from_start or bool(logs)
