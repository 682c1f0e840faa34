"""Before anything is submitted: Slurm's client answers here. (The server's own flags are
checked per trial by the runner's preflight, on this host, before its sbatch.)"""

from __future__ import annotations

import shutil
import subprocess
import threading

from tuiapp.common.errors import UsageError

CLIENT_COMMANDS = ("sbatch", "squeue", "scontrol", "scancel")


def check_slurm() -> None:
    """UsageError (one line, exit 2) when the Slurm client is missing or its controller is
    not answering."""
    missing = [c for c in CLIENT_COMMANDS if shutil.which(c) is None]
    if missing:
        raise UsageError(f"--slurm: {', '.join(missing)} not found (install Slurm's client, or run on a login node)")
    try:
        done = subprocess.run(["scontrol", "ping"], capture_output=True, text=True, timeout=30,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.SubprocessError) as exc:
        raise UsageError(f"--slurm: scontrol ping failed: {exc}") from None
    if done.returncode != 0 or " UP" not in done.stdout:
        text = (done.stdout + done.stderr).strip().splitlines()
        raise UsageError(f"--slurm: Slurm's controller does not answer: {text[0] if text else 'scontrol ping failed'}")


_HELP_LOCKS: dict[tuple[str, ...], threading.Lock] = {}
PREFLIGHT_JOB_TIME = "5"  # minutes: --help takes seconds; the rest is margin for a slow start
PREFLIGHT_TIMEOUT_S = 900.0  # queue wait included


def job_preflight(argv: list[str], spec, *, classify=None) -> list:
    """Preflight where SGLang is installed only on the nodes (``[slurm] preflight = "job"``):
    the server's ``--help`` runs as a short job on one node (``srun -N1 -n1``), then its flags
    are checked as the local preflight checks them. ``--help`` outputs are cached per command,
    so a campaign of one launcher runs one such job."""
    from tuiapp.server.launchers import NotChecked, find_launcher
    from tuiapp.server.preflight import (
        Problem,
        check_flags,
        help_failure,
        missing_required,
        parse_help,
        run_help,
    )

    found = find_launcher(argv)
    if isinstance(found, NotChecked):
        return [Problem("note", "", f"preflight skipped: {found.reason}; the flags are not checked")]
    if found.name == "sglang serve":
        return [Problem("note", "", "preflight skipped: `sglang serve` is checked on this host only "
                                    "([slurm] preflight = \"here\"); the flags are not checked")]
    srun = ["srun", "-N1", "-n1", "--job-name=tuiapp-preflight", f"--time={PREFLIGHT_JOB_TIME}", "--quiet"]
    if spec.partition:
        srun.append(f"--partition={spec.partition}")
    if spec.account:
        srun.append(f"--account={spec.account}")
    shown = " ".join(found.help_command)
    with _HELP_LOCKS.setdefault(tuple(srun + found.help_command), threading.Lock()):
        # trials in flight wait for the first one's job, then read its cached --help
        try:
            code, out = run_help([*srun, *found.help_command], timeout_s=PREFLIGHT_TIMEOUT_S)
        except OSError as exc:
            return [Problem("error", "", f"cannot run srun for the preflight job: {exc.strerror or exc}")]
    if code is None:
        return [Problem("error", "", f"the preflight job (`{shown} --help` on a node) did not finish within "
                                     f"{PREFLIGHT_TIMEOUT_S:g} s")]
    options = parse_help(out) if code == 0 else {}
    if not options:
        failure = classify(out) if classify is not None else None
        if failure is not None:
            return [Problem("error", "", f"`{shown} --help` on a node died: {failure[1]}", kind=failure[0])]
        return [Problem("error", "", f"`{shown} --help` on a node {help_failure(code, out)}",
                        "is SGLang installed on the nodes?")]
    return check_flags(found.flags, options) + missing_required(found.flags, out)
