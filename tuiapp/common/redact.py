"""Keep secrets (API keys, tokens, passwords) off disk and off the screen.

A flag or variable is secret when one of its name's words ends in token, key, secret,
password, passwd or credential(s): ``--api-key``, ``--admin-api-key``, ``--hf-token``,
``HF_TOKEN``, ``OPENAI_API_KEY``, ``PGPASSWORD``. Matching whole words keeps
``--tokenizer-path``, ``--max-total-tokens`` and ``TOKENIZERS_PARALLELISM`` readable.

:class:`Redactor` masks the *values* wherever they appear in text, because servers echo
them (SGLang logs ``server_args={... 'api_key': '...'}`` at start).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

MASK = "***"
_SECRET_WORD = re.compile(r"(token|key|secret|password|passwd|credentials?)$", re.IGNORECASE)
_WORD_SPLIT = re.compile(r"[-_.]+")
# Values that are switches, not secrets: masking "1" or "true" would mangle every log line.
_NOT_SECRET_VALUES = {"", "0", "1", "true", "false", "yes", "no", "on", "off", "none", "null"}
MIN_SECRET_LEN = 4


def is_secret_name(name: str) -> bool:
    """True for a flag (``--api-key``) or variable (``HF_TOKEN``) that holds a secret."""
    words = _WORD_SPLIT.split(name.lstrip("-"))
    return any(_SECRET_WORD.search(word) for word in words if word)


def _is_flag(token: str) -> bool:
    return token.startswith("--") or (len(token) == 2 and token[0] == "-" and token[1].isalpha())


def redact_argv(argv: list[str]) -> list[str]:
    """A copy of ``argv`` with the values of secret flags replaced by ``***``."""
    out: list[str] = []
    mask_next = False
    for token in argv:
        if mask_next and not _is_flag(token):
            out.append(MASK)
            mask_next = False
            continue
        mask_next = False
        name, eq, _value = token.partition("=")
        if name.startswith("--") and is_secret_name(name):
            if eq:
                out.append(f"{name}={MASK}")
            else:
                out.append(token)
                mask_next = True
            continue
        out.append(token)
    return out


def redact_env(env: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``env`` (or any name -> value mapping, e.g. a server's resolved args) with
    the values of secret-named entries replaced by ``***``; empty values stay as they are."""
    return {k: (MASK if is_secret_name(k) and v else v) for k, v in env.items()}


def secret_values(argv: Iterable[str] = (), env: Mapping[str, str] | None = None) -> list[str]:
    """The secret values in a command line and an environment, for :class:`Redactor`."""
    argv = list(argv)
    found: list[str] = []
    for i, token in enumerate(argv):
        name, eq, value = token.partition("=")
        if not (name.startswith("--") and is_secret_name(name)):
            continue
        if eq:
            found.append(value)
        elif i + 1 < len(argv) and not _is_flag(argv[i + 1]):
            found.append(argv[i + 1])
    for name, value in (env or {}).items():
        if is_secret_name(name):
            found.append(value)
    return [v for v in found if v.strip().lower() not in _NOT_SECRET_VALUES]


class Redactor:
    """Masks known secret values in text and in a byte stream.

    Values shorter than :data:`MIN_SECRET_LEN` characters are not masked in free text
    (masking "abc" everywhere would make the log unreadable); they are still masked by
    :func:`redact_argv`. For streams, :meth:`feed` holds back a chunk's tail while it could
    be the start of a secret that the next chunk completes, so a secret split across two
    reads is still caught; :meth:`flush` releases it at the end.
    """

    def __init__(self, secrets: Iterable[str | None]) -> None:
        uniq = {s for s in secrets if s and len(s) >= MIN_SECRET_LEN}
        # Longest first, so a secret that contains another is masked whole.
        self.secrets = sorted(uniq, key=len, reverse=True)
        self._bsecrets = [s.encode() for s in self.secrets]
        self._pattern = re.compile("|".join(re.escape(s) for s in self.secrets)) if uniq else None
        self._bpattern = (
            re.compile(b"|".join(re.escape(s) for s in self._bsecrets)) if uniq else None
        )
        self._secret_bytes = frozenset(b for s in self._bsecrets for b in s)
        self._held = b""

    def __bool__(self) -> bool:
        return bool(self.secrets)

    def redact(self, text: str) -> str:
        return self._pattern.sub(MASK, text) if self._pattern is not None else text

    def redact_bytes(self, data: bytes) -> bytes:
        return self._bpattern.sub(MASK.encode(), data) if self._bpattern is not None else data

    def feed(self, chunk: bytes) -> bytes:
        """Redact the next piece of a stream; returns what is safe to emit now."""
        if self._bpattern is None:
            return chunk
        data = self._bpattern.sub(MASK.encode(), self._held + chunk)
        keep = self._partial_tail(data)
        self._held = data[len(data) - keep :] if keep else b""
        return data[: len(data) - keep] if keep else data

    def flush(self) -> bytes:
        held, self._held = self._held, b""
        return held

    def _partial_tail(self, data: bytes) -> int:
        """Length of the longest suffix of ``data`` that is a proper prefix of a secret."""
        if not data or data[-1] not in self._secret_bytes:
            return 0  # the common case: a chunk ends in a newline
        best = 0
        for secret in self._bsecrets:
            for n in range(min(len(secret) - 1, len(data)), best, -1):
                if data.endswith(secret[:n]):
                    best = n
                    break
        return best
