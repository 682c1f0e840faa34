"""The plan's ``[slurm]`` table and a trial's own ``slurm`` table (what it changes), read
with the plan; ``trials --slurm`` (tuiapp.slurm) runs them.

A trial's table overrides the plan's for that trial only (``nodes = 2`` for the TP16 trial);
the rest of the plan's table applies to every trial.
"""

from __future__ import annotations

import re
import string
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

# Slurm's --time: minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM, D-HH:MM:SS
_TIME = re.compile(r"^(\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d{1,2}(:\d{1,2}){0,2}|UNLIMITED|INFINITE)$")
# options tuiapp sets itself: a plan that sets them would break how tuiapp finds the job's output
OWNED_OPTIONS = ("--output", "--error", "--parsable", "--wrap", "--nodes", "--ntasks-per-node",
                 "--job-name", "-o", "-e", "-N", "-J")
PLACEHOLDERS = ("command", "nnodes", "node_rank", "node", "head", "head_addr", "dist_init_addr",
                "port", "dist_port", "host")


def _check_time(value: str | None) -> str | None:
    if value is not None and not _TIME.match(value.strip()):
        raise ValueError(f"{value!r} is not a Slurm time (minutes, HH:MM:SS or D-HH:MM:SS)")
    return value.strip() if value is not None else None


def _check_options(value: list[str]) -> list[str]:
    for option in value:
        name = option.split("=", 1)[0]
        if name in OWNED_OPTIONS:
            raise ValueError(f"{name} is set by tuiapp (use the [slurm] keys for nodes; logs go to job_dir)")
        if not option.startswith("-"):
            raise ValueError(f"{option!r} is not an sbatch option (one option per string, e.g. \"--exclusive\")")
    return value


def _check_some_options(value: list[str] | None) -> list[str] | None:
    return None if value is None else _check_options(value)


def check_template(value: str | None) -> str | None:
    """A launcher template names only known placeholders and must run the trial's command."""
    if value is None:
        return None
    try:
        fields = {f for _, f, _, _ in string.Formatter().parse(value) if f is not None}
    except ValueError as exc:
        raise ValueError(f"launcher template: {exc}") from None
    unknown = sorted(fields - set(PLACEHOLDERS))
    if unknown:
        raise ValueError(f"launcher template: unknown placeholder {{{unknown[0]}}} "
                         f"(known: {', '.join('{' + p + '}' for p in PLACEHOLDERS)})")
    if "command" not in fields:
        raise ValueError("launcher template: it must contain {command} (the trial's server command)")
    return value


class TrialSlurm(BaseModel):
    """What one trial changes: ``[trial.slurm]`` or ``slurm = {nodes = 2}``."""

    model_config = ConfigDict(extra="forbid")
    nodes: int | None = Field(None, ge=1, description="nodes of this trial's job")
    gpus_per_node: int | None = Field(None, ge=0)
    time_limit: str | None = None
    sbatch_options: list[str] | None = None
    launcher: str | None = None

    _time = field_validator("time_limit")(_check_time)
    _opts = field_validator("sbatch_options")(_check_some_options)
    _tmpl = field_validator("launcher")(check_template)


class SlurmSpec(BaseModel):
    """``[slurm]``: where and how every trial's job runs."""

    model_config = ConfigDict(extra="forbid")
    partition: str | None = None
    account: str | None = None
    nodes: int = Field(1, ge=1, description="nodes per trial")
    gpus_per_node: int | None = Field(None, ge=0, description="--gres=gpu:N on each node")
    time_limit: str | None = None  # sbatch --time
    in_flight: int = Field(1, ge=1, description="trials (jobs) queued or running at once")
    sbatch_options: list[str] = Field(default_factory=list)  # verbatim, e.g. ["--exclusive"]
    launcher: str | None = None  # a node's command line; placeholders in PLACEHOLDERS
    job_dir: str | None = None  # on a filesystem every node shares: scripts, node logs, GPU samples
    port: int | None = Field(None, gt=0, lt=65536, description="the head's HTTP port (default: a free one)")
    url: str | None = None  # the benchmark's target when not the head: a router ("http://router:8000")
    dcgm: str | None = None  # a node's dcgm-exporter, "{node}:9400": GPU telemetry from it, no agent
    gpu_agent: bool = True  # without dcgm: tuiapp's own sampler on each node as an extra step
    python: str | None = None  # the nodes' Python for the agent (default: this one)
    lease_s: int = Field(60, ge=3, description="a job without word from tuiapp this long cancels itself")
    # where the server's flags are checked before a trial's sbatch: on this host, or (SGLang
    # installed only on the nodes) as a short job on one node
    preflight: Literal["here", "job"] = "here"
    # job_dir on a filesystem the nodes and this host share (the usual case); false: each node
    # keeps its files in /tmp/tuiapp-JOB, tuiapp reads logs through `srun --overlap tail -F`
    shared_fs: bool = True

    _time = field_validator("time_limit")(_check_time)
    _opts = field_validator("sbatch_options")(_check_options)
    _tmpl = field_validator("launcher")(check_template)

    @field_validator("dcgm")
    @classmethod
    def _dcgm(cls, value: str | None) -> str | None:
        if value is not None and "{node}" not in value:
            raise ValueError("dcgm: name each node's exporter with {node}, e.g. \"{node}:9400\"")
        return value

    def for_trial(self, overrides: dict) -> SlurmSpec:
        """This table with a trial's own keys on top."""
        return self.model_copy(update={k: v for k, v in overrides.items() if v is not None})
