#!/usr/bin/env bash
# Issue 35 on a real GPU: `tuiapp launch --headless --telemetry nvml -- python3 job.py`, where
# job.py is a plain PyTorch program that takes GPU memory 1 GiB at a time until CUDA runs out.
# job.py is no SGLang launcher, so preflight must not run it: it notes every run with its
# arguments, and the one run must be the launch's (no --help). Expected: a note "preflight
# skipped", an `oom` alert with the real message, GPU memory samples near the card's size,
# result oom, exit 1.
#
# Run on a machine with an NVIDIA GPU, PyTorch and tuiapp's dependencies, from the repo root:
#     OUT=/tmp/out bash benchmarks/preflight_h200.sh
# (on this workplace's H200, through the device tool, with pydantic, pydantic_core,
# annotated_types, typing_inspection, typing_extensions and orjson carried as wheels in .whl).
set -u
OUT=${OUT:-/tmp/preflight_h200}
mkdir -p "$OUT"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
fi
export PYTHONPATH=/tmp/site:$PWD
cat > "$OUT/job.py" <<'PY'
import pathlib, sys, time
import torch
pathlib.Path(sys.argv[1]).open("a").write(repr(sys.argv[2:]) + "\n")
print("job: taking GPU memory", flush=True)
blocks = []
while True:
    blocks.append(torch.empty(1 << 30, dtype=torch.uint8, device="cuda"))
    time.sleep(0.01)
PY
rm -f "$OUT/runs.txt"
python3 -m tuiapp launch --headless --telemetry nvml --runs 1 --record "$OUT/job.jsonl" --log "$OUT/job.server.log" \
  -- python3 "$OUT/job.py" "$OUT/runs.txt" --steps 10 > "$OUT/launch.txt" 2>&1
echo "tuiapp exit code: $?"
echo "runs of job.py (its arguments, one line a run):"; cat "$OUT/runs.txt"
grep -E "preflight|ALERT|result|server +failed" "$OUT/launch.txt"
python3 - "$OUT/job.jsonl" <<'PY'
import sys
from tuiapp.record.reading import read_recording
events = read_recording(sys.argv[1]).events
used = [e.mem_used_bytes for e in events if e.kind == "gpu" and e.mem_used_bytes]
print(f"gpu samples: {len(used)}, max memory used {max(used) / 2**30:.1f} GiB" if used else "no gpu samples")
PY
