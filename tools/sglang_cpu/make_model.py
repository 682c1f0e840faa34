"""Build a tiny random Llama checkpoint with a locally trained BPE tokenizer, offline.

    python make_model.py OUT_DIR

Nothing is downloaded: the tokenizer is trained on the ASCII lines of a fixed list of this
Python's standard-library modules, the weights come from a fixed torch seed. The folder is an
ordinary Hugging Face checkpoint that SGLang loads with --model-path. 2 layers, hidden 256,
vocab 4096: ~2.6 M parameters, so the real server decodes at ~100+ tok/s on one CPU core.
"""

import json
import os
import sys
import sysconfig
from pathlib import Path

os.environ.setdefault("RAYON_NUM_THREADS", "1")  # a deterministic BPE merge order
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

SEED = 1234
VOCAB = 4096
SPECIALS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = (  # ChatML, so /v1/chat/completions works
    "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}"
    "{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
CORPUS = ["argparse", "ast", "base64", "calendar", "configparser", "contextlib", "csv", "dataclasses",
          "datetime", "difflib", "enum", "functools", "heapq", "inspect", "ipaddress", "os", "pathlib",
          "pickle", "pprint", "queue", "random", "shutil", "socket", "statistics", "string",
          "subprocess", "tarfile", "tempfile", "textwrap", "threading", "tokenize", "traceback",
          "typing", "uuid", "warnings"]


def corpus_lines():
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    for name in CORPUS:
        path = stdlib / f"{name}.py"
        if path.exists():
            for line in path.read_text(encoding="utf-8", errors="ignore").splitlines():
                if line.strip() and line.isascii():
                    yield line.rstrip() + "\n"


def main(out: Path) -> None:
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    torch.manual_seed(SEED)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.train_from_iterator(list(corpus_lines()), trainer=trainers.BpeTrainer(
        vocab_size=VOCAB, min_frequency=2, special_tokens=SPECIALS, show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    ids = {s: tok.token_to_id(s) for s in SPECIALS}
    hf_tok = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<|im_end|>", pad_token="<|endoftext|>",
                                     model_max_length=4096, chat_template=CHAT_TEMPLATE,
                                     clean_up_tokenization_spaces=False)
    config = LlamaConfig(vocab_size=tok.get_vocab_size(), hidden_size=256, intermediate_size=688,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4,
                         max_position_embeddings=4096, rms_norm_eps=1e-6, tie_word_embeddings=True,
                         bos_token_id=None, eos_token_id=ids["<|im_end|>"], pad_token_id=ids["<|endoftext|>"])
    model = LlamaForCausalLM(config).eval()
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out)
    hf_tok.save_pretrained(out)
    (out / "tuiapp_model.json").write_text(json.dumps({"seed": SEED, "vocab": VOCAB, "special_ids": ids}) + "\n")
    print(f"[make_model] {out}: LlamaForCausalLM, {sum(p.numel() for p in model.parameters())} parameters")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
