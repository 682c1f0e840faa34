#!/usr/bin/env bash
# The NVML sampler's share of tuiapp's CPU on a real GPU (issue 15), headless.
#
# Run on a machine with an NVIDIA GPU, PyTorch and tuiapp's dependencies, from the repo root:
#     OUT=/tmp/out bash benchmarks/nvml_share_h200.sh
# (on this workplace's H200: through the device tool, with pydantic, pydantic_core,
# annotated_types, typing_inspection, typing_extensions and orjson carried as wheels in .whl;
# they are installed to /tmp/site first when .whl exists).
#
# A PyTorch process copies 256 MiB host->device and back for 4 minutes (~30 GB/s each way
# on an H200 at PCIe Gen5 x16). Meanwhile `tuiapp launch --headless` of the simulator runs
# four times, --telemetry nvml and off alternately; its own CPU (utime+stime from
# /proc/PID/stat) is read over 40 s after 15 s of warm-up. nvml minus off is the sampler's
# share. Figures: docs/performance.md.
set -u
OUT=${OUT:-/tmp/nvml_share}
mkdir -p "$OUT"
if [ -d .whl ]; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
fi
export PYTHONPATH=/tmp/site:$PWD
python3 -c "import tuiapp, pydantic, orjson, pynvml; print('imports ok')" || exit 1
nvidia-smi --query-gpu=name,driver_version,pcie.link.gen.current,pcie.link.width.current --format=csv
nproc
python3 - > $OUT/load.txt 2>&1 <<'PY' &
import torch, time
h = torch.empty(256 << 20, dtype=torch.uint8).pin_memory(); d = torch.empty_like(h, device="cuda")
t = time.time(); n = 0
while time.time() - t < 240:
    d.copy_(h, non_blocking=True); h.copy_(d, non_blocking=True); torch.cuda.synchronize(); n += 2
print("copies", n, "GB/s", round(n * 0.25 / (time.time() - t), 1), flush=True)
PY
sleep 5
cpu() { awk '{print $14 + $15}' /proc/$1/stat; }
for tel in nvml off nvml off; do
  PYTHONUNBUFFERED=1 PYTHONPATH=/tmp/site:$PWD \
    python3 -m tuiapp launch --headless --telemetry $tel --no-preflight --log $OUT/server_$tel.log -- \
    python3 -m tuiapp.sim.server --model-path moonshotai/Kimi-K2.5 --tp 8 --port $((20000 + RANDOM % 20000)) --sim-speed 20 > $OUT/launch_$tel.txt 2>&1 &
  pid=$!
  sleep 15; a=$(cpu $pid); sleep 40; b=$(cpu $pid)
  echo "== telemetry $tel: tuiapp $(( b - a )) ticks of $(getconf CLK_TCK)/s in 40 s = $(python3 -c "print(round(100 * ($b - $a) / $(getconf CLK_TCK) / 40, 2))")% of a core"
  kill -INT $pid; wait $pid
  grep -E "gpus" $OUT/launch_$tel.txt | tail -1
done
wait
cat $OUT/load.txt
