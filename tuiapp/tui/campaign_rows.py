"""The campaign view's table (trials --slurm): one line per trial's job, from the TrialJob
events, as plain cells (the screen in tuiapp/tui/screens/campaign.py draws them; text from a
job, such as a cancel reason, is never markup there)."""

from __future__ import annotations

from tuiapp.common.numfmt import num
from tuiapp.events import TrialJob

COLUMNS = ("trial", "job", "state", "nodes", "wait s", "tok/s", "runs", "incidents")
LIVE_FIRST = {"RUNNING": 0, "COMPLETING": 1, "PENDING": 2, "CONFIGURING": 2}


def campaign_rows(jobs: dict[str, TrialJob]) -> list[tuple[str, ...]]:
    """Trials in flight first (running, then queued), then the finished ones; each in the
    order it was submitted."""
    order = sorted(jobs.values(), key=lambda j: (LIVE_FIRST.get(j.state, 3), _job_number(j.job_id)))
    return [row_cells(j) for j in order]


def row_cells(job: TrialJob) -> tuple[str, ...]:
    state = job.state + (f" ({job.reason})" if job.reason and job.state == "PENDING" else "")
    incidents = str(job.incidents) + (f": {job.last_incident}" if job.last_incident else "")
    return (job.trial, job.job_id, state, ",".join(job.nodes) or "-", num(job.queue_wait_s, ".0f"),
            num(job.decode_tok_s, ".1f"), str(job.runs), incidents)


def in_flight(jobs: dict[str, TrialJob]) -> int:
    return sum(j.state in LIVE_FIRST for j in jobs.values())


def _job_number(job_id: str) -> tuple[int, str]:
    head = job_id.split("_")[0]
    return (int(head) if head.isdigit() else 0, job_id)
