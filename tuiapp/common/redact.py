"""Keep secrets (API keys, tokens, passwords) off disk and off the screen.

A flag or variable is secret when one of its name's words ends in token, key, secret,
password, passwd or credential(s): ``--api-key``, ``--admin-api-key``, ``--hf-token``,
``HF_TOKEN``, ``OPENAI_API_KEY``, ``PGPASSWORD``. Matching whole words keeps
``--tokenizer-path``, ``--max-total-tokens`` and ``TOKENIZERS_PARALLELISM`` readable.

:class:`Redactor` masks the *values* wherever they appear in text, because servers echo
them (SGLang logs ``server_args={... 'api_key': '...'}`` at start, ``/server_info`` returns the
whole ``launch_command``).

A flag is judged by the option argparse will read it as: ``--api-ke KEY`` is ``--api-key KEY``
to tuiapp's parser and to SGLang's, so it is a secret too. Against a server whose ``--help``
we have not read, abbreviations are expanded against SGLang's secret flags.

Every secret value found anywhere (tuiapp's own options, a server command, its environment,
a server's answer) is remembered for the whole process (:func:`remember`), and every sink that
writes (recorder, printer, server log, report, summary) masks the remembered values with
:func:`mask` / :func:`mask_bytes` / :func:`redact_tree`: one process, one set of secrets.
"""

from __future__ import annotations

import functools
import json
import re
import threading
from collections.abc import Iterable, Mapping
from typing import Any

MASK = "***"
_SECRET_WORD = re.compile(r"(token|key|secret|password|passwd|credentials?)$", re.IGNORECASE)
_WORD_SPLIT = re.compile(r"[-_.]+")
# Values that are switches, not secrets: masking "1" or "true" would mangle every log line.
_NOT_SECRET_VALUES = {"", "0", "1", "true", "false", "yes", "no", "on", "off", "none", "null"}
MIN_SECRET_LEN = 4
# SGLang's secret options, for expanding abbreviations (argparse accepts unique prefixes) when
# the server's own option list is not at hand.
SGLANG_SECRET_FLAGS = ("--api-key", "--admin-api-key")


@functools.lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """True for a flag (``--api-key``) or variable (``HF_TOKEN``) that holds a secret."""
    # Cached: every trial asks again for the same few hundred names (/server_info's keys, the
    # server's flags, the environment), two regex passes per name.
    words = _WORD_SPLIT.split(name.lstrip("-"))
    return any(_SECRET_WORD.search(word) for word in words if word)


def _is_flag(token: str) -> bool:
    return token.startswith("--") or (len(token) == 2 and token[0] == "-" and token[1].isalpha())


def is_secret_flag(name: str, options: Iterable[str] | None = None) -> bool:
    """True when argparse would read the long option ``name`` as a secret one: its own name,
    or the option(s) of ``options`` it abbreviates (SGLang's secret flags when None; pass
    ``()`` for no expansion). An ambiguous prefix counts when any candidate is secret."""
    if not name.startswith("--"):
        return False
    if is_secret_name(name):
        return True
    known = SGLANG_SECRET_FLAGS if options is None else tuple(options)
    if name in known or len(name) < 4:
        return False  # an exact match that is not secret; "--" and "--a" abbreviate nothing
    return any(is_secret_name(o) for o in known if o.startswith(name))


def redact_argv(argv: list[str], options: Iterable[str] | None = None) -> list[str]:
    """A copy of ``argv`` with the values of secret flags (see :func:`is_secret_flag`) replaced
    by ``***``, and every remembered secret value masked wherever it appears."""
    options = None if options is None else tuple(options)
    out: list[str] = []
    mask_next = False
    for token in argv:
        if mask_next and not _is_flag(token):
            out.append(MASK)
            mask_next = False
            continue
        mask_next = False
        name, eq, _value = token.partition("=")
        if is_secret_flag(name, options):
            if eq:
                out.append(f"{name}={MASK}")
            else:
                out.append(token)
                mask_next = True
            continue
        out.append(mask(token))
    return out


def redact_env(env: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``env`` (or any name -> value mapping, e.g. a server's resolved args) with
    the values of secret-named entries replaced by ``***``; empty values stay as they are."""
    return {k: (MASK if is_secret_name(k) and v else v) for k, v in env.items()}


def secret_values(argv: Iterable[str] = (), env: Mapping[str, str] | None = None,
                  options: Iterable[str] | None = None) -> list[str]:
    """The secret values in a command line and an environment, for :class:`Redactor`."""
    argv = list(argv)
    options = None if options is None else tuple(options)
    found: list[str] = []
    for i, token in enumerate(argv):
        name, eq, value = token.partition("=")
        if not is_secret_flag(name, options):
            continue
        if eq:
            found.append(value)
        elif i + 1 < len(argv) and not _is_flag(argv[i + 1]):
            found.append(argv[i + 1])
    for name, value in (env or {}).items():
        if is_secret_name(name):
            found.append(value)
    return [v for v in found if _worth_masking(v)]


def _worth_masking(value: Any) -> bool:
    return (isinstance(value, str) and len(value) >= MIN_SECRET_LEN
            and value.strip().lower() not in _NOT_SECRET_VALUES)


# ---------------------------------------------------------------------- process-wide secrets

_own_options: tuple[str, ...] = ()


def set_own_options(options: Iterable[str]) -> None:
    """tuiapp's own long options for this command (the CLI sets them): the header's argv is
    judged by the parser that read it (``--api chat`` is not ``--api-key`` there)."""
    global _own_options
    _own_options = tuple(options)


def own_options() -> tuple[str, ...]:
    return _own_options


_known: set[str] = set()
_known_lock = threading.Lock()
_known_redactor: Redactor | None = None


def remember(*values: str | None) -> None:
    """Add secret values found anywhere; from now on every sink masks them."""
    global _known_redactor
    fresh = {v for v in values if _worth_masking(v)} - _known
    if fresh:
        with _known_lock:
            _known.update(fresh)
            _known_redactor = None


def known_secrets() -> list[str]:
    return sorted(_known)


def _redactor() -> Redactor:
    global _known_redactor
    redactor = _known_redactor
    if redactor is None:
        with _known_lock:
            # JSON-escaped spellings too: a recording line holds a value as JSON writes it.
            spelled = {json.dumps(v)[1:-1] for v in _known} | _known
            redactor = _known_redactor = Redactor(spelled)
    return redactor


def mask(text: str) -> str:
    """``text`` with every remembered secret value replaced by ``***``."""
    return _redactor().redact(text) if _known else text


def mask_bytes(data: bytes) -> bytes:
    return _redactor().redact_bytes(data) if _known else data


def redact_tree(obj: Any, extra: Iterable[str | None] = ()) -> Any:
    """A copy of a JSON-like value with secrets masked at every depth: values of secret-named
    keys become ``***`` (and are remembered), and every known secret value (remembered, in
    ``extra``, or found under a secret-named key anywhere in ``obj``) is masked inside strings,
    e.g. ``/server_info``'s ``launch_command``."""
    found: list[str] = [v for v in extra if _worth_masking(v)]

    def collect(node: Any) -> None:
        if isinstance(node, Mapping):
            for key, value in node.items():
                if isinstance(key, str) and is_secret_name(key) and _worth_masking(value):
                    found.append(value)
                collect(value)
        elif isinstance(node, (list, tuple)):
            for item in node:
                collect(item)
        elif isinstance(node, str) and "--" in node:
            # a command line inside a string: its secret flags' values
            found.extend(secret_values(node.split()))

    collect(obj)
    remember(*found)

    def walk(node: Any) -> Any:
        if isinstance(node, Mapping):
            return {key: (MASK if isinstance(key, str) and is_secret_name(key) and value else walk(value))
                    for key, value in node.items()}
        if isinstance(node, (list, tuple)):
            return [walk(item) for item in node]
        if isinstance(node, str):
            return mask(node)
        return node

    return walk(obj)


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
