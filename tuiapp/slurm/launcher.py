"""A node's command line, filled from the allocation at run time.

The trial's server command loses the flags the allocation decides (``--host``, ``--port``,
``--nnodes``, ``--node-rank``, ``--dist-init-addr``) and gets them back as shell variables the
batch script sets on every node (TUIAPP_*; SLURM_NODEID is the node's rank in the job). A plan
can give its own template: shell text with ``{placeholders}`` (tuiapp.trials.slurm_spec.PLACEHOLDERS),
e.g. ``"numactl -i all {command} --tp 16 --nnodes {nnodes} --node-rank {node_rank} --dist-init-addr
{dist_init_addr} --host {host} --port {port}"``.
"""

from __future__ import annotations

import shlex

from tuiapp.trials.flags import canonical

# flags the allocation decides, with whether they take a value
ALLOCATION_FLAGS = {"host": True, "port": True, "nnodes": True, "node-rank": True, "dist-init-addr": True}

# placeholder -> what it becomes in the node's shell (set by the batch script, or by Slurm)
SHELL_VALUES = {
    "nnodes": '"$TUIAPP_NNODES"',
    "node_rank": '"$SLURM_NODEID"',
    "node": '"$SLURMD_NODENAME"',
    "head": '"$TUIAPP_HEAD"',
    "head_addr": '"$TUIAPP_HEAD_ADDR"',
    "dist_init_addr": '"$TUIAPP_HEAD_ADDR:$TUIAPP_DIST_PORT"',
    "port": '"$TUIAPP_PORT"',
    "dist_port": '"$TUIAPP_DIST_PORT"',
    "host": "0.0.0.0",  # the benchmark reaches the head from the submitting host
}

SINGLE_NODE = "{command} --host {host} --port {port}"
MULTI_NODE = ("{command} --nnodes {nnodes} --node-rank {node_rank} --dist-init-addr {dist_init_addr} "
              "--host {host} --port {port}")


def without_allocation_flags(argv: list[str]) -> list[str]:
    """``argv`` less the flags the allocation decides (either spelling, ``--flag=value`` too)."""
    out: list[str] = []
    skip = False
    for token in argv:
        if skip:
            skip = False
            continue
        if token.startswith("--"):
            name, eq, _ = token[2:].partition("=")
            key = canonical(name)
            if key in ALLOCATION_FLAGS:
                skip = ALLOCATION_FLAGS[key] and not eq
                continue
        out.append(token)
    return out


def node_command(argv: list[str], nnodes: int, template: str | None = None) -> str:
    """The shell line every node runs (one task per node)."""
    template = template or (MULTI_NODE if nnodes > 1 else SINGLE_NODE)
    values = dict(SHELL_VALUES, command=shlex.join(without_allocation_flags(argv)))
    return template.format(**values)
