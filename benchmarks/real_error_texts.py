"""On a real GPU box (the device tool): produce real PyTorch/NCCL failure output and run
`tuiapp logscan --json` over it, so the detector is checked on text it did not write.

Run: PYTHONPATH=. python benchmarks/real_error_texts.py OUT_DIR
Writes OUT_DIR/<case>.log (the real output, wrapped as an SGLang scheduler record where
SGLang would log it) and prints each case's logscan verdict.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

OOM = """
import torch
x = torch.empty(int(torch.cuda.get_device_properties(0).total_memory * 0.6), dtype=torch.uint8, device="cuda")
y = torch.empty(int(torch.cuda.get_device_properties(0).total_memory * 0.6), dtype=torch.uint8, device="cuda")
"""

# Two ranks on one GPU: NCCL refuses ("Duplicate GPU detected"), a real DistBackendError.
NCCL = """
import os, torch, torch.distributed as dist, torch.multiprocessing as mp
def work(rank):
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT="29533")
    torch.cuda.set_device(0)
    dist.init_process_group("nccl", rank=rank, world_size=2, device_id=torch.device("cuda:0"))
    t = torch.ones(1024, device="cuda")
    dist.all_reduce(t)
    torch.cuda.synchronize()
if __name__ == "__main__":
    mp.spawn(work, nprocs=2)
"""


def run(code: str, timeout_s: float = 120) -> str:
    # a script file, not -c: multiprocessing's spawn must import the worker function
    script = Path(os.environ.get("TMPDIR", "/tmp")) / f"real_error_{abs(hash(code))}.py"
    script.write_text(textwrap.dedent(code))
    env = {**os.environ, "NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
           "NVSHMEM_DISABLE_NVLS": "1", "TORCH_NCCL_ASYNC_ERROR_HANDLING": "1"}
    try:
        out = subprocess.run([sys.executable, str(script)], capture_output=True,
                             text=True, timeout=timeout_s, env=env)
        return out.stdout + out.stderr
    except subprocess.TimeoutExpired as exc:
        return (exc.stdout or b"").decode() + (exc.stderr or b"").decode() + "\n[timed out]\n"


def as_scheduler_record(text: str, rank: int) -> str:
    """How SGLang logs a scheduler exception: one record, continuation lines unprefixed."""
    stamp = time.strftime("%Y-%m-%d %H:%M:%S")
    return f"[{stamp} TP{rank}] Scheduler hit an exception: {text.strip()}\n"


def main() -> int:
    out_dir = Path(sys.argv[1])
    out_dir.mkdir(parents=True, exist_ok=True)
    oom = run(OOM)
    cases = {
        "real_torch_oom_raw": oom,
        "real_torch_oom_sglang": "".join(as_scheduler_record(oom, r) for r in range(2)),
        "real_nccl_duplicate_gpu_raw": run(NCCL),
    }
    for name, text in cases.items():
        path = out_dir / f"{name}.log"
        path.write_text(text)
        res = subprocess.run([sys.executable, "-m", "tuiapp", "logscan", str(path), "--json"],
                             capture_output=True, text=True)
        print(f"== {name}: {len(text.splitlines())} lines")
        print(res.stdout.strip() or res.stderr.strip())
        (out_dir / f"{name}.logscan.json").write_text(res.stdout)
    gpus = subprocess.run([sys.executable, "-m", "tuiapp", "gpus", "--json"], capture_output=True, text=True)
    (out_dir / "gpus.json").write_text(gpus.stdout)
    print("== tuiapp gpus --json (rc", gpus.returncode, ")")
    print(json.dumps(json.loads(gpus.stdout), indent=1)[:1500] if gpus.stdout.strip() else gpus.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
