"""Server flags as a mapping: parse a token list, canonical names, defaults, back to argv.

A flag is keyed by its *canonical* name (aliases and renamed spellings fold into one, so
``--tp 8`` in the baseline and ``--tp-size 4`` in a trial are the same knob), while the
spelling the user wrote is kept for the command line we launch.
"""

from __future__ import annotations

from dataclasses import dataclass

FlagValue = str | bool | list[str]

# Aliases and renames (docs/sglang-interface.md §8; docs/campaign.md §3's older spellings).
ALIASES = {
    "model": "model-path",
    "tp": "tp-size",
    "tensor-parallel-size": "tp-size",
    "ep": "ep-size",
    "expert-parallel-size": "ep-size",
    "dp": "dp-size",
    "data-parallel-size": "dp-size",
    "cuda-graph-max-bs-decode": "cuda-graph-max-bs",
    "cuda-graph-bs-decode": "cuda-graph-bs",
    "speculative-draft-model": "speculative-draft-model-path",
}

# Values SGLang uses when the flag is absent: setting a flag to its default is no change.
DEFAULTS = {
    "host": "127.0.0.1",
    "port": "30000",
    "tp-size": "1",
    "ep-size": "1",
    "dp-size": "1",
    "num-continuous-decode-steps": "1",
    "stream-interval": "1",
    "decode-log-interval": "40",
    "moe-a2a-backend": "none",
    "moe-runner-backend": "auto",
    "log-level": "info",
}

# Operational flags: they change where and how we observe the server, not its speed, so
# they are not knobs (the campaign's port change 8000 -> 30000 is not a fourth knob).
NOT_KNOBS = {
    "host", "port", "api-key", "admin-api-key", "log-level", "log-level-http",
    "log-requests", "decode-log-interval", "enable-metrics", "enable-metrics-for-all-schedulers",
    "enable-cache-report", "sim-speed", "served-model-name", "skip-server-warmup",
}


def canonical(name: str) -> str:
    """``--TP_Size`` -> ``tp-size``; aliases fold to one name."""
    bare = name.strip().lstrip("-").replace("_", "-").lower()
    return ALIASES.get(bare, bare)


@dataclass(frozen=True)
class Flag:
    spelling: str  # as written, without the leading dashes
    value: FlagValue  # True: a bare switch; str; list for nargs="+"

    def tokens(self) -> list[str]:
        if self.value is True:
            return [f"--{self.spelling}"]
        if isinstance(self.value, list):
            return [f"--{self.spelling}", *self.value]
        return [f"--{self.spelling}", str(self.value)]


def to_value(raw: object) -> FlagValue | None:
    """A TOML value as a flag value; ``False`` means "absent" (None)."""
    if raw is False:
        return None
    if raw is True:
        return True
    if isinstance(raw, list):
        return [str(v) for v in raw]
    if isinstance(raw, float) and raw.is_integer() and abs(raw) >= 1:
        return str(int(raw))
    return str(raw)


def parse_tokens(tokens: list[str]) -> dict[str, Flag]:
    """``["--tp", "8", "--enable-metrics", "--x=y"]`` -> canonical name -> Flag.

    Raises ValueError on a token that is neither a flag nor a flag's value.
    """
    flags: dict[str, Flag] = {}
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if not tok.startswith("--"):
            raise ValueError(f"{tok!r} is not a --flag")
        name, eq, inline = tok[2:].partition("=")
        if eq:
            flags[canonical(name)] = Flag(name, inline)
            i += 1
            continue
        values: list[str] = []
        i += 1
        while i < len(tokens) and not _is_flag(tokens[i]):
            values.append(tokens[i])
            i += 1
        value: FlagValue = True if not values else values[0] if len(values) == 1 else values
        flags[canonical(name)] = Flag(name, value)
    return flags


def _is_flag(tok: str) -> bool:
    # "-1" (chunked-prefill-size) is a value, "--x" a flag.
    return tok.startswith("--")


def effective_value(name: str, flag: Flag | None) -> str | None:
    """The value that matters for a diff: None when the flag is absent or at its default."""
    if flag is None:
        return None
    value = flag.value
    text = " ".join(value) if isinstance(value, list) else ("on" if value is True else value)
    if DEFAULTS.get(name) == text:
        return None
    return text


def argv_tokens(flags: dict[str, Flag]) -> list[str]:
    out: list[str] = []
    for flag in flags.values():
        out += flag.tokens()
    return out
