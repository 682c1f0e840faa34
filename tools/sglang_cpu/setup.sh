#!/usr/bin/env bash
# Set up the REAL SGLang 0.5.23 server on a CPU-only x86-64 box, offline except for PyPI, with a
# tiny local model: the reference the `real_sglang` test tier and benchmarks/real_fidelity.py run.
#
#   tools/sglang_cpu/setup.sh [HOME]      HOME: $TUIAPP_SGLANG_HOME, default /tmp/tuiapp-sglang-cpu
#
# Makes HOME/venv (python -m sglang.launch_server works there) and HOME/model; prints the venv
# path last. Idempotent: a complete venv and model are kept. ~4 min from an empty pip cache
# (2.6 GB of wheels), seconds when done. Why each step is needed:
#   1. deps from requirements.txt with --no-deps: sglang's own Requires-Dist pins CUDA-only
#      packages (sglang-kernel, flashinfer, flash-attn, deep-gemm, ...) that cannot work here.
#   2. sglang==0.5.23 itself with --no-deps, for the same reason.
#   3. the sgl_kernel shim (sgl_kernel/ beside this file) into site-packages: the CPU engine
#      imports `*_cpu` kernels from sgl-kernel's CPU build, which is not on PyPI.
#   4. the model (make_model.py): no Hugging Face hub here.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
HOME_DIR="${1:-${TUIAPP_SGLANG_HOME:-/tmp/tuiapp-sglang-cpu}}"
VENV="$HOME_DIR/venv"
MODEL="$HOME_DIR/model"
PY="${TUIAPP_SGLANG_PYTHON:-python3.11}"
VERSION=0.5.23
PIP=(-q --disable-pip-version-check --no-deps)
say() { echo "[sglang-cpu] $(date +%H:%M:%S) $*" >&2; }
t0=$(date +%s)
mkdir -p "$HOME_DIR"

check='import sglang, sgl_kernel, torch, torchvision; assert sglang.__version__ == "'$VERSION'" and sgl_kernel.SHIM'
if [ -x "$VENV/bin/python" ] && "$VENV/bin/python" -c "$check" 2>/dev/null; then
  say "venv $VENV is complete"
else
  say "venv $VENV ($("$PY" --version))"
  rm -rf "$VENV"
  "$PY" -m venv "$VENV"
  say "pinned deps, --no-deps (torch and its nvidia-* libs are most of it)"
  "$VENV/bin/pip" install "${PIP[@]}" -r "$HERE/requirements.txt" 2>&1 | sed "/is ignored: it is neither/d" >&2
  say "sglang==$VERSION --no-deps"
  "$VENV/bin/pip" install "${PIP[@]}" "sglang==$VERSION" 2>&1 | sed "/is ignored: it is neither/d" >&2
  site="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
  rm -rf "$site/sgl_kernel" && cp -r "$HERE/sgl_kernel" "$site/sgl_kernel"
  rm -rf "$site/sgl_kernel/__pycache__"
  "$VENV/bin/python" -c "$check"
fi

if [ ! -f "$MODEL/model.safetensors" ] || [ ! -f "$MODEL/tuiapp_model.json" ]; then
  say "model -> $MODEL"
  rm -rf "$MODEL"
  HF_HUB_OFFLINE=1 "$VENV/bin/python" -W ignore "$HERE/make_model.py" "$MODEL" >&2
fi
say "ready in $(( $(date +%s) - t0 )) s"
echo "$VENV"
