"""The tiny checkpoint as a GGUF file for llama-cpp-python, with llama.cpp's own converter.

    python to_gguf.py LLAMA_CPP_DIR MODEL_DIR OUT.gguf

LLAMA_CPP_DIR is llama.cpp as llama-cpp-python's sdist vendors it (its convert_hf_to_gguf.py
and gguf-py). The converter knows a BPE tokenizer by the hash of its pre-tokenizer's output
and refuses others; ours is trained here (tools/sglang_cpu/make_model.py) on a byte-level
pre-tokenizer, GPT-2's, so that is the name it gets.
"""

import runpy
import sys
from pathlib import Path

llama_cpp, model, out = (Path(a) for a in sys.argv[1:4])
sys.path[:0] = [str(llama_cpp), str(llama_cpp / "gguf-py")]

from conversion import base  # noqa: E402 - after the path is set

known = base.TextModel.get_vocab_base_pre


def vocab_base_pre(self, tokenizer) -> str:
    try:
        return known(self, tokenizer)
    except NotImplementedError:
        return "gpt-2"


base.TextModel.get_vocab_base_pre = vocab_base_pre
sys.argv = ["convert_hf_to_gguf.py", str(model), "--outfile", str(out), "--outtype", "f32"]
runpy.run_path(str(llama_cpp / "convert_hf_to_gguf.py"), run_name="__main__")
