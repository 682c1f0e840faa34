"""Before anything is submitted: Slurm's client answers here. (The server's own flags are
checked per trial by the runner's preflight, on this host, before its sbatch.)"""

from __future__ import annotations

import shutil
import subprocess

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
