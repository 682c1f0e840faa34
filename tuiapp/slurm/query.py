"""What Slurm's commands print, read defensively (Debian 12 ships 22.05, newer sites 24.x).

``sbatch --parsable`` -> job id; ``squeue -h -t all -o FMT`` -> one line per job;
``scontrol show job -o ID`` -> ``Key=Value`` pairs (the final state while the job is within
MinJobAge); ``sacct -n -P`` -> the final state where slurmdbd keeps accounting.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass, field

# a job that is in none of these is over
LIVE_STATES = {"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED",
               "RESIZING", "SIGNALING", "STAGE_OUT", "RESV_DEL_HOLD", "REQUEUE_FED", "REQUEUE_HOLD",
               "SPECIAL_EXIT", "STOPPED", "PREEMPTED"}
FINAL_STATES = {"COMPLETED", "FAILED", "TIMEOUT", "CANCELLED", "OUT_OF_MEMORY", "NODE_FAIL",
                "BOOT_FAIL", "DEADLINE", "REVOKED"}
SQUEUE_FORMAT = "%i|%T|%N|%V|%S|%r|%k"  # the comment last: it may hold anything


@dataclass
class JobInfo:
    job_id: str
    state: str  # Slurm's state name, "CANCELLED" without " by 0"
    nodes: list[str] = field(default_factory=list)
    submit: dt.datetime | None = None
    start: dt.datetime | None = None
    end: dt.datetime | None = None
    exit_code: int | None = None
    signal: int | None = None
    reason: str | None = None
    stdout: str | None = None
    comment: str | None = None

    @property
    def over(self) -> bool:
        return self.state not in LIVE_STATES

    @property
    def running(self) -> bool:
        return self.state == "RUNNING"

    @property
    def queue_wait_s(self) -> float | None:
        if self.submit is None or self.start is None:
            return None
        return max((self.start - self.submit).total_seconds(), 0.0)


class SlurmError(RuntimeError):
    """A Slurm command failed; the message is its own first line."""


def parse_job_id(text: str) -> str:
    """``sbatch --parsable``: ``ID`` or ``ID;CLUSTER``."""
    line = text.strip().splitlines()[-1] if text.strip() else ""
    job_id = line.split(";", 1)[0].strip()
    if not re.fullmatch(r"\d+(_\d+)?", job_id):
        raise SlurmError(f"sbatch printed no job id: {text.strip()[:200]!r}")
    return job_id


def parse_time(value: str | None) -> dt.datetime | None:
    if not value or value in ("Unknown", "None", "N/A", "(null)"):
        return None
    try:
        return dt.datetime.fromisoformat(value)
    except ValueError:
        return None


def _state(value: str) -> str:
    return value.split()[0].rstrip("+").upper() if value.strip() else "UNKNOWN"


def _exit(value: str | None) -> tuple[int | None, int | None]:
    m = re.fullmatch(r"(\d+):(\d+)", (value or "").strip())
    return (int(m.group(1)), int(m.group(2))) if m else (None, None)


def expand_hostlist(text: str) -> list[str]:
    """``n[1-2],gpu[01-03,07]`` -> the names, zero padding kept (what ``scontrol show
    hostnames`` prints). Empty, ``(null)`` or ``None assigned``: no nodes."""
    text = text.strip()
    if not text or text.startswith("(") or text.startswith("None"):
        return []
    out: list[str] = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\][^,\[]*)*", text):
        out += _expand_one(part.strip(","))
    return out


def _expand_one(name: str) -> list[str]:
    m = re.search(r"\[([^\]]*)\]", name)
    if m is None:
        return [name] if name else []
    head, tail = name[:m.start()], name[m.end():]
    names = []
    for item in m.group(1).split(","):
        lo, _, hi = item.partition("-")
        if hi:
            width = len(lo)
            names += [f"{head}{i:0{width}d}" for i in range(int(lo), int(hi) + 1)]
        else:
            names.append(head + item)
    return [n + rest for n in names for rest in _expand_one(tail) or [""]] if "[" in tail else [n + tail for n in names]


def parse_key_values(text: str) -> dict[str, str]:
    """``scontrol show job -o``: ``Key=Value`` separated by spaces; a value may hold spaces
    only in a few keys we do not read, so a token without ``=`` joins the previous value."""
    out: dict[str, str] = {}
    last = None
    for token in text.strip().split(" "):
        if "=" in token and re.match(r"^[A-Za-z/:_]+=", token):
            key, _, value = token.partition("=")
            out[key] = value
            last = key
        elif last is not None and token:
            out[last] += " " + token
    return out


def parse_scontrol_job(text: str) -> JobInfo:
    kv = parse_key_values(text)
    if "JobId" not in kv or "JobState" not in kv:
        raise SlurmError(f"not a job record: {text.strip()[:200]!r}")
    code, sig = _exit(kv.get("ExitCode"))
    return JobInfo(job_id=kv["JobId"], state=_state(kv["JobState"]),
                   nodes=expand_hostlist(kv.get("NodeList", "")), submit=parse_time(kv.get("SubmitTime")),
                   start=parse_time(kv.get("StartTime")), end=parse_time(kv.get("EndTime")),
                   exit_code=code, signal=sig, reason=None if kv.get("Reason") in (None, "None") else kv["Reason"],
                   stdout=kv.get("StdOut"), comment=None if kv.get("Comment") in (None, "(null)") else kv["Comment"])


def parse_squeue(text: str) -> dict[str, JobInfo]:
    """Lines of ``squeue -h -t all -o SQUEUE_FORMAT``; the start time of a pending job is an
    estimate, so it counts only once the job ran."""
    out = {}
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) < 6 or not parts[0]:
            continue
        job_id, state, nodes, submit, start, reason = parts[:6]
        comment = "|".join(parts[6:]) or None
        info = JobInfo(job_id=job_id, state=_state(state), nodes=expand_hostlist(nodes),
                       submit=parse_time(submit), reason=None if reason in ("None", "") else reason,
                       comment=None if comment in (None, "(null)") else comment)
        if info.state != "PENDING":
            info.start = parse_time(start)
        out[job_id] = info
    return out


SACCT_FIELDS = "JobID,State,NodeList,Submit,Start,End,ExitCode"


def parse_sacct(text: str, job_id: str) -> JobInfo | None:
    """``sacct -n -P -j ID -o SACCT_FIELDS``: the job's own line (not its steps')."""
    for line in text.splitlines():
        parts = line.strip().split("|")
        if len(parts) < 7 or parts[0] != job_id:
            continue
        code, sig = _exit(parts[6])
        return JobInfo(job_id=job_id, state=_state(parts[1]), nodes=expand_hostlist(parts[2]),
                       submit=parse_time(parts[3]), start=parse_time(parts[4]), end=parse_time(parts[5]),
                       exit_code=code, signal=sig)
    return None
