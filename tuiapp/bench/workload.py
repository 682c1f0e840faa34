"""Prompts for the loop: the reference set, a JSONL file, or synthetic lengths."""

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


def synthetic(input_tokens: int, count: int = 16, seed: int = 0) -> list[Prompt]:
    """Random token ids of an exact length (ids 1000-20000: ordinary tokens in common vocabularies)."""
    rng = random.Random(seed)
    return [
        Prompt(input_ids=tuple(rng.randrange(1000, 20000) for _ in range(input_tokens)))
        for _ in range(count)
    ]


def build(workload: str, *, input_tokens: int = 128, seed: int = 0) -> list[Prompt]:
    if workload == "reference":
        prompts = [Prompt(text=t) for t in REFERENCE_PROMPTS]
        random.Random(seed).shuffle(prompts)
        return prompts
    if workload == "synthetic":
        return synthetic(input_tokens, seed=seed)
    return load_jsonl(Path(workload))
