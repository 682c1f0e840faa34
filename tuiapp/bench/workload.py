"""Prompts for the loop: the reference set, a prompt file, or synthetic lengths.

Prompt files: JSONL (one prompt a line: text, OpenAI chat messages or request bodies,
input ids) or ShareGPT JSON (a list of {"conversations": [...]}: the first human turn is
the prompt, the reply's length the output length, at ~4 characters a token since we have
no tokenizer). Synthetic prompts draw lengths from mean +- spread and may share a prefix
per group, for the radix cache.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

# Short prompts of 26-34 tokens with common tokenizers (Llama/Kimi/Qwen BPEs), like the
# campaign's script: decode speed, not prefill, is what they measure.
REFERENCE_PROMPTS = [
    "Explain in simple terms how a transformer language model decides which word comes next, "
    "and why it sometimes repeats itself.",
    "Write a short story about a lighthouse keeper who discovers that the lamp has been "
    "signalling to ships that no longer exist.",
    "List the main differences between tensor parallelism and expert parallelism when serving "
    "a large mixture of experts model.",
    "Describe the water cycle to a ten year old, using an example from a rainy afternoon in "
    "a small mountain village.",
    "What are the trade-offs between speculative decoding and simply buying a faster GPU for "
    "an interactive chat service?",
    "Summarise the plot of a heist film in which every member of the crew secretly works for "
    "a different insurance company.",
    "Give step by step instructions for baking sourdough bread at home, including how to keep "
    "the starter alive between bakes.",
    "Compose a polite email to a colleague asking them to review a pull request that changes "
    "the all-reduce backend of our server.",
    "Why does the sky appear blue during the day and red at sunset? Answer with the physics, "
    "but keep it brief and clear.",
    "Imagine a city where traffic lights are controlled by birds. Describe one ordinary morning "
    "commute in that city.",
    "Compare Python and Rust for writing a high throughput network service, focusing on memory "
    "safety, speed and developer time.",
    "Write a haiku sequence of four poems about debugging a distributed system late at night "
    "while the coffee goes cold.",
]

_WORDS = (
    "time data model token server graph memory cache batch request stream decode kernel "
    "layer expert router signal value river mountain window garden letter number music"
).split()


@dataclass(frozen=True, slots=True)
class Prompt:
    text: str | None = None
    input_ids: tuple[int, ...] | None = None
    messages: tuple[dict[str, Any], ...] | None = None
    max_new_tokens: int | None = None  # per-prompt override from a JSONL file

    def as_text(self) -> str:
        if self.text is not None:
            return self.text
        if self.messages:
            return "\n".join(str(m.get("content", "")) for m in self.messages)
        return " ".join(_WORDS[i % len(_WORDS)] for i in self.input_ids or ())

    def as_messages(self) -> list[dict[str, Any]]:
        if self.messages:
            return list(self.messages)
        return [{"role": "user", "content": self.as_text()}]


class WorkloadError(ValueError):
    """A prompt file that cannot be used (message is one line for the user)."""


def load_jsonl(path: Path) -> list[Prompt]:
    """Lines of {"prompt"|"text": str} or {"messages": [...]} or {"input_ids": [...]} or "str".

    ``max_new_tokens`` / ``max_tokens`` / ``output_len`` on a line override the setting.
    """
    prompts: list[Prompt] = []
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise WorkloadError(f"cannot read prompt file {path}: {exc.strerror}") from None
    for line_no, line in enumerate(raw.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError:
            raise WorkloadError(f"{path}:{line_no}: not valid JSON") from None
        prompts.append(_prompt_from(obj, f"{path}:{line_no}"))
    if not prompts:
        raise WorkloadError(f"{path}: no prompts")
    return prompts


def _prompt_from(obj: Any, where: str) -> Prompt:
    if isinstance(obj, dict) and isinstance(obj.get("body"), dict):
        obj = obj["body"]  # an OpenAI batch-API line: {"custom_id", "method", "url", "body": {...}}
    if isinstance(obj, str):
        return Prompt(text=obj)
    if not isinstance(obj, dict):
        raise WorkloadError(f"{where}: expected a string or an object")
    out = obj.get("max_new_tokens", obj.get("max_tokens", obj.get("output_len")))
    if out is not None and (not isinstance(out, int) or out < 1):
        raise WorkloadError(f"{where}: max_new_tokens must be a positive integer")
    text = obj.get("prompt", obj.get("text"))
    if isinstance(text, str):
        return Prompt(text=text, max_new_tokens=out)
    messages = obj.get("messages")
    if isinstance(messages, list) and messages and all(isinstance(m, dict) for m in messages):
        return Prompt(messages=tuple(messages), max_new_tokens=out)
    ids = obj.get("input_ids")
    if isinstance(ids, list) and ids and all(isinstance(i, int) for i in ids):
        return Prompt(input_ids=tuple(ids), max_new_tokens=out)
    raise WorkloadError(f"{where}: needs 'prompt', 'text', 'messages' or 'input_ids'")


def load_sharegpt(path: Path) -> list[Prompt]:
    try:
        data = orjson.loads(path.read_bytes())
    except OSError as exc:
        raise WorkloadError(f"cannot read prompt file {path}: {exc.strerror}") from None
    except orjson.JSONDecodeError:
        raise WorkloadError(f"{path}: not valid JSON") from None
    if not isinstance(data, list):
        raise WorkloadError(f"{path}: expected a ShareGPT list of {{'conversations': [...]}}")
    prompts: list[Prompt] = []
    for i, item in enumerate(data):
        turns = item.get("conversations") if isinstance(item, dict) else None
        if not isinstance(turns, list):
            raise WorkloadError(f"{path}: entry {i}: no 'conversations' list")
        texts = [(t.get("from"), t.get("value")) for t in turns if isinstance(t, dict)]
        human = next((v for f, v in texts if f in ("human", "user") and isinstance(v, str) and v), None)
        if human is None:
            continue  # conversations that open with the model: skipped, as bench_serving does
        reply = next((v for f, v in texts if f in ("gpt", "assistant", "chatgpt") and isinstance(v, str)), None)
        out = max(1, round(len(reply) / 4)) if reply else None
        prompts.append(Prompt(text=human, max_new_tokens=out))
    if not prompts:
        raise WorkloadError(f"{path}: no conversations with a human turn")
    return prompts


def load_file(path: Path) -> list[Prompt]:
    """ShareGPT JSON (a .json file or one whose text opens with '[') or JSONL."""
    try:
        with path.open("rb") as f:
            head = f.read(64).lstrip()
    except OSError as exc:
        raise WorkloadError(f"cannot read prompt file {path}: {exc.strerror}") from None
    if path.suffix == ".json" or head.startswith(b"["):
        return load_sharegpt(path)
    return load_jsonl(path)


def _spread(rng: random.Random, mean: int, spread: int) -> int:
    return mean if not spread else rng.randint(mean - spread, mean + spread)


def synthetic(input_tokens: int, count: int = 16, seed: int = 0, *, input_spread: int = 0,
              output_tokens: int | None = None, output_spread: int = 0,
              shared_prefix_tokens: int = 0, prefix_groups: int = 1) -> list[Prompt]:
    """Random token ids (1000-20000: ordinary tokens in common vocabularies).

    Prompt i belongs to group i % prefix_groups and starts with that group's prefix of
    ``shared_prefix_tokens``; ``input_tokens`` counts the part after the prefix.
    """
    rng = random.Random(seed)
    prefixes = [tuple(rng.randrange(1000, 20000) for _ in range(shared_prefix_tokens)) for _ in range(prefix_groups)]
    out_spread = output_tokens is not None and output_spread > 0
    return [
        Prompt(
            input_ids=prefixes[i % prefix_groups]
            + tuple(rng.randrange(1000, 20000) for _ in range(_spread(rng, input_tokens, input_spread))),
            max_new_tokens=_spread(rng, output_tokens, output_spread) if out_spread and output_tokens else None,
        )
        for i in range(count)
    ]


def build(workload: str, *, input_tokens: int = 128, seed: int = 0, settings: Any = None) -> list[Prompt]:
    """``settings`` (a BenchSettings) adds spreads and shared prefixes to synthetic prompts,
    and the output spread to prompts that do not set their own length."""
    s = settings
    if workload == "synthetic":
        if s is None:
            return synthetic(input_tokens, seed=seed)
        # more distinct prompts when lengths vary or groups share prefixes: the spread must show
        count = 16 if not (s.input_spread or s.output_spread or s.prefix_groups > 1) else max(64, 4 * s.prefix_groups)
        return synthetic(s.input_tokens, count, s.seed, input_spread=s.input_spread, output_tokens=s.max_new_tokens,
                         output_spread=s.output_spread, shared_prefix_tokens=s.shared_prefix_tokens,
                         prefix_groups=s.prefix_groups)
    if s is not None and (s.shared_prefix_tokens or s.prefix_groups > 1 or s.input_spread):
        raise WorkloadError("--shared-prefix-tokens, --prefix-groups and an input spread need synthetic prompts"
                            " (--input-tokens)")
    if workload == "reference":
        prompts = [Prompt(text=t) for t in REFERENCE_PROMPTS]
        random.Random(seed).shuffle(prompts)
    else:
        prompts = load_file(Path(workload))
    if s is not None and s.output_spread:
        rng = random.Random(s.seed)
        prompts = [p if p.max_new_tokens else Prompt(p.text, p.input_ids, p.messages,
                                                     _spread(rng, s.max_new_tokens, s.output_spread))
                   for p in prompts]
    return prompts
