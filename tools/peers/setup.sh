#!/usr/bin/env bash
# Set up real OpenAI-compatible servers that are not SGLang, on CPU, from PyPI, with the same tiny
# local model as the real SGLang tier (tools/sglang_cpu/make_model.py): the `real_peers` test tier
# (tests/test_real_peers.py, docs/attach.md "Other OpenAI-compatible servers").
#
#   tools/peers/setup.sh [HOME]      HOME: $TUIAPP_PEERS_HOME, default /tmp/tuiapp-peers
#
# Makes HOME/hf (transformers serve), HOME/fastchat (FastChat's OpenAI API server), HOME/llama
# (llama-cpp-python's server), HOME/model (the checkpoint), HOME/model-v4 (the same for
# transformers 4.x) and HOME/model.gguf (the same for llama.cpp); prints HOME last. Idempotent.
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
# FastChat 0.2.36 (controller + model worker + OpenAI API server): its last release, which
# streams only under pydantic 1 (pydantic 2 ends every stream with a TypeError), on
# transformers 4.57 (which does not know 5.x's tokenizer class name: model-v4 is the same
# checkpoint with a tokenizer_config.json 4.57 reads).
fc="$HOME_DIR/fastchat"
check_fc='import fastchat, pydantic, transformers; assert fastchat.__version__ == "0.2.36" and pydantic.VERSION.startswith("1.")'
if [ -x "$fc/bin/python" ] && "$fc/bin/python" -c "$check_fc" 2>/dev/null; then
  say "venv $fc is complete"
else
  say "venv $fc: FastChat 0.2.36, transformers 4.57.6, pydantic 1"
  rm -rf "$fc"
  "$PY" -m venv "$fc"
  "$fc/bin/pip" install "${PIP[@]}" torch==2.13.0 transformers==4.57.6 "fschat[model_worker]==0.2.36" \
    pydantic==1.10.27 fastapi==0.99.1 >&2
  "$fc/bin/python" -c "$check_fc"
fi
v4="$HOME_DIR/model-v4"
if [ ! -f "$v4/tokenizer_config.json" ]; then
  rm -rf "$v4" && mkdir -p "$v4"
  for f in "$model"/*; do ln -s "$f" "$v4/"; done
  rm "$v4/tokenizer_config.json"
  "$fc/bin/python" - "$model" "$v4" <<'PY'
import json, sys
src, dst = sys.argv[1], sys.argv[2]
config = json.load(open(f"{src}/tokenizer_config.json"))
config["tokenizer_class"] = "PreTrainedTokenizerFast"
config.setdefault("chat_template", open(f"{src}/chat_template.jinja").read())
json.dump(config, open(f"{dst}/tokenizer_config.json", "w"), indent=1)
PY
fi
# llama-cpp-python 0.3.36's server (the GGUF of the same checkpoint): PyPI has its sdist only, so
# pip compiles llama.cpp (~10 min on 2 cores; pip's wheel cache keeps the result). The GGUF comes
# from llama.cpp's own converter as the sdist vendors it (to_gguf.py beside this file).
ll="$HOME_DIR/llama"
check_ll='import llama_cpp, llama_cpp.server.app; assert llama_cpp.__version__ == "0.3.36"'
if [ -x "$ll/bin/python" ] && "$ll/bin/python" -c "$check_ll" 2>/dev/null; then
  say "venv $ll is complete"
else
  say "venv $ll: llama-cpp-python[server]==0.3.36 (compiles llama.cpp unless pip has the wheel)"
  rm -rf "$ll"
  "$PY" -m venv "$ll"
  CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-2}" \
    "$ll/bin/pip" install "${PIP[@]}" "llama-cpp-python[server]==0.3.36" >&2
  "$ll/bin/python" -c "$check_ll"
fi
gguf="$HOME_DIR/model.gguf"
if [ ! -f "$gguf" ]; then
  src="$HOME_DIR/src"
  vendor="$src/llama_cpp_python-0.3.36/vendor/llama.cpp"
  if [ ! -f "$vendor/convert_hf_to_gguf.py" ]; then
    say "llama.cpp's converter from the llama-cpp-python 0.3.36 sdist"
    mkdir -p "$src"
    "$ll/bin/pip" download "${PIP[@]}" --no-deps --no-binary :all: llama-cpp-python==0.3.36 -d "$src" >&2
    tar xzf "$src/llama_cpp_python-0.3.36.tar.gz" -C "$src" llama_cpp_python-0.3.36/vendor/llama.cpp/conversion \
      llama_cpp_python-0.3.36/vendor/llama.cpp/convert_hf_to_gguf.py llama_cpp_python-0.3.36/vendor/llama.cpp/gguf-py
  fi
  say "model -> $gguf"
  HF_HUB_OFFLINE=1 "$hf/bin/python" "$HERE/to_gguf.py" "$vendor" "$model" "$gguf.part" >&2
  mv "$gguf.part" "$gguf"
fi
say "ready in $(( $(date +%s) - t0 )) s"
echo "$HOME_DIR"
