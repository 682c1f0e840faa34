"""Submit, watch and cancel jobs: one ``Slurm`` per campaign remembers every job it submitted,
so Ctrl-C, a hang-up or the end of the campaign cancels whatever is still queued or running.

One ``squeue`` call a poll covers every job in flight (``-t all``: finished ones stay listed
for MinJobAge); a job it no longer lists, or lists as over, is read once more with
``scontrol show job`` (exit code, end time) or, where accounting exists, ``sacct``.
"""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
from pathlib import Path

from tuiapp.slurm.query import (
    SACCT_FIELDS,
    SQUEUE_FORMAT,
    JobInfo,
    SlurmError,
    parse_job_id,
    parse_sacct,
    parse_scontrol_job,
    parse_squeue,
)

SLURM_POLL_S = 1.0
COMMAND_TIMEOUT_S = 30.0


async def slurm_command(*argv: str, timeout_s: float = COMMAND_TIMEOUT_S) -> str:
    """stdout of a Slurm command; SlurmError with its own first line when it fails."""
    try:
        proc = await asyncio.create_subprocess_exec(
            *argv, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
    except OSError as exc:
        raise SlurmError(f"{argv[0]}: {exc.strerror or exc} (is Slurm's client installed here?)") from None
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout_s)
    except asyncio.TimeoutError:
        proc.kill()
        await proc.wait()
        raise SlurmError(f"{argv[0]}: no answer in {timeout_s:g} s") from None
    if proc.returncode != 0:
        text = (err or out).decode("utf-8", "replace").strip()
        raise SlurmError(f"{argv[0]}: {text.splitlines()[0] if text else f'exit code {proc.returncode}'}")
    return out.decode("utf-8", "replace")


async def job_info(job_id: str) -> JobInfo | None:
    """The job as ``scontrol`` knows it, else as ``sacct`` does; None when neither does."""
    try:
        return parse_scontrol_job(await slurm_command("scontrol", "show", "job", "-o", job_id))
    except SlurmError:
        pass
    try:
        return parse_sacct(await slurm_command("sacct", "-n", "-P", "-j", job_id, "-o", SACCT_FIELDS), job_id)
    except SlurmError:
        return None


class Slurm:
    """Every job this tuiapp submitted, and the latest word on each."""

    def __init__(self, poll_s: float = SLURM_POLL_S) -> None:
        self.poll_s = poll_s
        self.jobs: dict[str, JobInfo | None] = {}
        self.live: set[str] = set()
        self._round = asyncio.Event()
        self._poller: asyncio.Task | None = None
        self.poll_errors = 0

    async def submit(self, script: Path) -> str:
        job_id = parse_job_id(await slurm_command("sbatch", "--parsable", str(script)))
        self.jobs[job_id] = None
        self.live.add(job_id)
        if self._poller is None or self._poller.done():
            self._poller = asyncio.create_task(self._poll())
        return job_id

    def latest(self, job_id: str) -> JobInfo | None:
        return self.jobs.get(job_id)

    async def next_round(self) -> None:
        """Until the next poll has read every live job."""
        await self._round.wait()

    async def cancel(self, job_id: str) -> None:
        if job_id in self.live:
            with contextlib.suppress(SlurmError):
                await slurm_command("scancel", job_id)

    async def cancel_all(self) -> None:
        if self.live:
            with contextlib.suppress(SlurmError):
                await slurm_command("scancel", *sorted(self.live))

    def cancel_all_now(self) -> None:
        """Blocking, for the last moments of the process (no event loop to wait on)."""
        if self.live:
            with contextlib.suppress(OSError, subprocess.SubprocessError):
                subprocess.run(["scancel", *sorted(self.live)], timeout=COMMAND_TIMEOUT_S,
                               stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    async def close(self) -> None:
        if self._poller is not None:
            self._poller.cancel()
            await asyncio.gather(self._poller, return_exceptions=True)

    async def _poll(self) -> None:
        while self.live:
            await self.poll_once()
            done, self._round = self._round, asyncio.Event()
            done.set()
            await asyncio.sleep(self.poll_s)
        self._round.set()

    async def poll_once(self) -> None:
        ids = sorted(self.live)
        try:
            listed = parse_squeue(await slurm_command("squeue", "-h", "-t", "all", "-j", ",".join(ids),
                                                      "-o", SQUEUE_FORMAT))
        except SlurmError:
            self.poll_errors += 1
            listed = {}  # e.g. "Invalid job id specified" once every id is gone: ask one by one
        for job_id in ids:
            info = listed.get(job_id)
            if info is None or info.over:
                final = await job_info(job_id)
                info = final or info
            if info is None:
                continue  # neither squeue nor scontrol nor sacct answered: ask again next round
            self.jobs[job_id] = info
            if info.over:
                self.live.discard(job_id)
