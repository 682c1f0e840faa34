#!/usr/bin/env bash
# Set up real OpenAI-compatible servers that are not SGLang, on CPU, from PyPI, with the same tiny
# local model as the real SGLang tier (tools/sglang_cpu/make_model.py): the `real_peers` test tier
# (tests/test_real_peers.py, docs/attach.md "Other OpenAI-compatible servers").
#
#   tools/peers/setup.sh [HOME]      HOME: $TUIAPP_PEERS_HOME, default /tmp/tuiapp-peers
#
# Makes HOME/hf (transformers serve), HOME/model (the checkpoint); prints HOME last. Idempotent.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
HOME_DIR="${1:-${TUIAPP_PEERS_HOME:-/tmp/tuiapp-peers}}"
PY="${TUIAPP_PEERS_PYTHON:-python3.11}"
TRANSFORMERS=5.17.0  # its /v1/models answers 500 when the hub cache folder is missing; chat streams
PIP=(-q --disable-pip-version-check)
say() { echo "[peers] $(date +%H:%M:%S) $*" >&2; }
t0=$(date +%s)
mkdir -p "$HOME_DIR"

hf="$HOME_DIR/hf"
check='import transformers, torch, fastapi, uvicorn, requests; assert transformers.__version__ == "'$TRANSFORMERS'"'
if [ -x "$hf/bin/python" ] && "$hf/bin/python" -c "$check" 2>/dev/null; then
  say "venv $hf is complete"
else
  say "venv $hf: torch 2.13.0 (CPU), transformers[serving]==$TRANSFORMERS"
  rm -rf "$hf"
  "$PY" -m venv "$hf"
  "$hf/bin/pip" install "${PIP[@]}" torch==2.13.0 >&2
  "$hf/bin/pip" install "${PIP[@]}" "transformers[serving]==$TRANSFORMERS" sentencepiece requests >&2
  "$hf/bin/python" -c "$check"
fi

model="$HOME_DIR/model"
if [ ! -f "$model/model.safetensors" ] || [ ! -f "$model/tuiapp_model.json" ]; then
  say "model -> $model"
  rm -rf "$model"
  HF_HUB_OFFLINE=1 "$hf/bin/python" -W ignore "$HERE/../sglang_cpu/make_model.py" "$model" >&2
fi
say "ready in $(( $(date +%s) - t0 )) s"
echo "$HOME_DIR"
