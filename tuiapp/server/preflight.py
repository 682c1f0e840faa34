"""Check a server command's flags against the installed server before a launch.

A typo or a flag renamed between SGLang versions otherwise costs a model load (minutes)
before argparse complains, or worse, argparse's prefix matching silently reads an old
flag as a different new one. We run ``<command> --help`` in a subprocess (no SGLang
import here), read the option strings from argparse's help text, and apply argparse's
own rules: exact match, else a unique prefix, else "ambiguous" or "unrecognized".
"""

from __future__ import annotations

import difflib
import os
import re
import signal
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from tuiapp.server import flag_renames, serve_cli
from tuiapp.server.launchers import NotChecked, find_launcher

Severity = Literal["error", "warning", "note"]


@dataclass(frozen=True)
class Problem:
    severity: Severity
    flag: str  # the flag as the user wrote it, "" for a problem with the command itself
    message: str
    suggestion: str | None = None  # what to write instead, e.g. "--cuda-graph-max-bs-decode"
    kind: str | None = None  # a failure the --help itself died of (oom, assertion, ...): the trial's status

    def __str__(self) -> str:
        hint = f" (try: {self.suggestion})" if self.suggestion else ""
        return f"{self.severity}: {self.message}{hint}"


# Spellings that changed between SGLang versions, with the PR of each: tuiapp.server.flag_renames.
RENAMES, DEPRECATED_SHIMS = flag_renames.RENAMES, flag_renames.DEPRECATED_SHIMS

_PYTHON = re.compile(r"^(python|pypy)[\d.]*$")
_PY_OPTS_WITH_ARG = {"-W", "-X", "-Q"}
_NUMBER = re.compile(r"^-\d|^-\.\d")
_OPTION_LINE = re.compile(r"^ {1,8}(-{1,2}[A-Za-z0-9].*)$")
_INVOCATION_FLAG = re.compile(r"(?:^|, )(-{1,2}[A-Za-z0-9][^\s,=\[{]*)")
_USAGE_FLAG = re.compile(r"[\[(| ](--[A-Za-z0-9][\w-]*)")


def split_command(argv: list[str]) -> tuple[list[str], list[str]]:
    """``(command, flags)``: ``python -m sglang.launch_server`` / ``sglang serve``, then the rest."""
    i = 0
    while i < len(argv) and not argv[i].startswith("-"):
        if _PYTHON.match(os.path.basename(argv[i])):
            return _split_python(argv, i)
        i += 1
    return list(argv[:i]), list(argv[i:])


def _split_python(argv: list[str], i: int) -> tuple[list[str], list[str]]:
    i += 1  # the interpreter
    while i < len(argv):
        token = argv[i]
        if token in ("-m", "-c"):
            i += 2
            break
        if token in _PY_OPTS_WITH_ARG:
            i += 2
        elif token.startswith("-") and token != "-":
            i += 1
        else:
            i += 1  # a script path
            break
    while i < len(argv) and not argv[i].startswith("-"):
        i += 1  # a subcommand after the module or script
    return list(argv[:i]), list(argv[i:])


def parse_help(text: str) -> dict[str, str]:
    """Option string -> its help text, from argparse ``--help`` output (any version)."""
    options: dict[str, str] = {}
    current: list[str] = []
    in_usage = False
    for line in text.splitlines():
        if line.startswith("usage:"):
            in_usage = True
        elif not line.strip():
            in_usage = False
            current = []
            continue
        if in_usage:
            for flag in _USAGE_FLAG.findall(" " + line):
                options.setdefault(flag, "")
            continue
        match = _OPTION_LINE.match(line)
        if match:
            invocation, _, help_text = match.group(1).partition("  ")
            current = _INVOCATION_FLAG.findall(invocation)
            for flag in current:
                options[flag] = help_text.strip()
        elif current and line.startswith(" "):
            for flag in current:
                # argparse wraps after a hyphen too ("--disable-decode-" / "cuda-graph")
                sep = "" if options[flag].endswith("-") else " "
                options[flag] = f"{options[flag]}{sep}{line.strip()}".strip()
        else:
            current = []
    return options


def required_options(text: str) -> list[str]:
    """Options the usage line lists outside brackets (argparse's ``required=True``)."""
    usage: list[str] = []
    for line in text.splitlines():
        if line.startswith("usage:"):
            usage = [line[len("usage:"):]]
        elif usage and line.strip():
            usage.append(line)
        elif usage:
            break
    required, depth = [], 0
    for token in re.findall(r"[\[\]()]|--[A-Za-z0-9][\w-]*", " ".join(usage)):
        if token in "[(":
            depth += 1
        elif token in "])":
            depth -= 1
        elif depth == 0:
            required.append(token)
    return required


def _aliases(flag: str, text: str) -> set[str]:
    """``flag`` and the other spellings on its help line (``--model-path``, ``--model``)."""
    for line in text.splitlines():
        match = _OPTION_LINE.match(line)
        if match:
            names = _INVOCATION_FLAG.findall(match.group(1).partition("  ")[0])
            if flag in names:
                return set(names)
    return {flag}


def missing_required(flags: list[str], text: str) -> list[Problem]:
    """Required options (from the help's usage line) that ``flags`` does not give."""
    given = {token.split("=", 1)[0] for token in flags if token.startswith("--")}
    problems = []
    for flag in required_options(text):
        names = _aliases(flag, text)
        # argparse also accepts a unique prefix of a required option.
        if not any(g in names or any(n.startswith(g) for n in names) for g in given):
            problems.append(Problem("error", flag, f"the required option {flag} is missing"))
    return problems


def _rename(flag: str, options: dict[str, str]) -> tuple[str | None, str] | None:
    found = flag_renames.rename_for(flag, options)
    return (found.replacement, found.text) if found is not None else None


def _closest(flag: str, options: dict[str, str]) -> str | None:
    longs = [o for o in options if o.startswith("--")]
    matches = difflib.get_close_matches(flag, longs, n=1, cutoff=0.75)
    return matches[0] if matches else None


def check_flags(flags: list[str], options: dict[str, str]) -> list[Problem]:
    """Problems with ``flags`` (the argv after the command) for a server with ``options``."""
    problems: list[Problem] = []
    for token in flags:
        if token == "--":
            break
        if not token.startswith("-") or token == "-" or _NUMBER.match(token):
            continue  # a value
        flag = token.split("=", 1)[0]
        if flag in options:
            problems.extend(_deprecated(flag, options))
            continue
        candidates = sorted(o for o in options if flag.startswith("--") and o.startswith(flag))
        rename = _rename(flag, options)
        if len(candidates) == 1:
            # argparse accepts a unique prefix; harmless unless the user meant an old flag
            # that now silently becomes a different one.
            if flag in RENAMES:
                why = rename[1] if rename is not None else flag_renames.first_reason(flag)
                problems.append(Problem(
                    "warning", flag,
                    f"{flag} is not an option here; argparse reads it as {candidates[0]} ({why})",
                    rename[0] if rename is not None else None,
                ))
            continue
        if candidates:
            message = f"ambiguous option: {flag} could match {', '.join(candidates)}"
        else:
            message = f"unrecognized option: {flag}"
        if rename is not None and flag in DEPRECATED_SHIMS:
            # SGLang may still accept the shim without listing it; argparse will tell.
            replacement, why = rename
            problems.append(Problem("warning", flag, f"{flag} is not listed by --help ({why})", replacement))
        elif rename is not None:
            replacement, why = rename
            problems.append(Problem("error", flag, f"{message} ({why})", replacement))
        else:
            problems.append(Problem("error", flag, message, _closest(flag, options)))
    return problems


def _deprecated(flag: str, options: dict[str, str]) -> list[Problem]:
    help_text = options.get(flag, "")
    rename = _rename(flag, options)
    shim = flag in DEPRECATED_SHIMS and rename is not None
    if "deprecat" not in help_text.lower() and not shim:
        return []
    suggestion = rename[0] if rename else None
    if suggestion is None:
        found = re.search(r"(?:use|Use)\s+(--[\w-]+(?:[= ][\w.-]+)?)", help_text)
        suggestion = found.group(1) if found else None
    return [Problem("warning", flag, f"{flag} is deprecated in this server version", suggestion)]


# A plan launches the same server command many times, and SGLang's --help imports torch
# (seconds): ask once per command per process. Only answers with an option list are kept.
_HELP_CACHE: dict[tuple[str, ...], str] = {}


def run_help(command: list[str], *, timeout_s: float = 60) -> tuple[int | None, str]:
    """``(exit code, output)`` of ``command --help``; exit code None when it timed out."""
    key = tuple(command)
    if key in _HELP_CACHE:
        return 0, _HELP_CACHE[key]
    code, out = _run_help(command, timeout_s)
    if code == 0 and parse_help(out):
        _HELP_CACHE[key] = out
    return code, out


def _run_help(command: list[str], timeout_s: float) -> tuple[int | None, str]:
    env = {**os.environ, "COLUMNS": "200", "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [*command, "--help"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        env=env,
        start_new_session=True,  # so a timeout can kill whatever it spawned
    )
    try:
        out, _ = proc.communicate(timeout=timeout_s)
        return proc.returncode, out.decode("utf-8", "replace")
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, _ = proc.communicate()
        return None, out.decode("utf-8", "replace")


_EXCEPTION_LINE = re.compile(r"^(?:[A-Za-z_][\w.]*\.)?[A-Za-z_]\w*(?:Error|Exception|Exit)\b:?.*$")
_ERROR_LINE = re.compile(r"\berror\b\s*:|No module named|not found|No such file|Permission denied|"
                         r"\bcannot\b|\bcan't\b", re.IGNORECASE)


def help_failure(code: int | None, out: str) -> str:
    """What went wrong with ``--help``, in words: the exception it died of, the error it printed,
    or that it printed no option list; never just whatever its last line happened to be."""
    lines = [ln.strip() for ln in out.splitlines() if ln.strip()]
    exception = next((ln for ln in reversed(lines) if _EXCEPTION_LINE.match(ln)), None)
    if exception is not None:
        return f"failed (exit {code}): {exception[:200]}"
    error = next((ln for ln in lines if _ERROR_LINE.search(ln)), None)
    if error is not None:
        return f"failed (exit {code}): {error[:200]}"
    if code == 0:
        return f"printed no option list ({len(lines)} lines of output): it does not look like an argparse --help"
    if not lines:
        return f"failed (exit {code}) without any output"
    return f"failed (exit {code}) and printed no option list"


Classify = Callable[[str], "tuple[str, str] | None"]


def preflight(argv: list[str], *, timeout_s: float = 60, classify: Classify | None = None) -> list[Problem]:
    """Problems with the server command ``argv``: an empty list means it looks fine.

    Only a launcher :func:`find_launcher` recognises is ever run (with ``--help``); for any
    other command the one problem is a note saying why nothing was checked. ``classify`` reads
    a failed help's output as a log (``tuiapp.logwatch.verdict.worst_failure``: the kind and line
    of its worst failure), so a help that died of an OOM is reported as an OOM."""
    found = find_launcher(argv)
    if isinstance(found, NotChecked):
        return [Problem("note", "", f"preflight skipped: {found.reason}; the flags are not checked")]
    command, flags = found.help_command, found.flags
    backend = None
    if found.name == "sglang serve":
        # its own selector and positional model path, which the server's parser never sees
        flags, backend = serve_cli.serve_flags(flags)
    shown = " ".join(command)
    try:
        code, out = run_help(command, timeout_s=timeout_s)
    except OSError as exc:  # not found, not executable, or not a program (ENOEXEC)
        if found.remote:
            return [_remote_unchecked(found.remote, f"cannot run {command[0]!r} here: {exc.strerror or exc}")]
        hint = "is SGLang installed in this environment?" if isinstance(exc, (FileNotFoundError, PermissionError)) else None
        return [Problem("error", "", f"cannot run the server command {command[0]!r}: {exc.strerror or exc}", hint)]
    if backend is not None and code == 0:
        section = serve_cli.help_section(out, backend)
        if section is None:
            return [Problem("note", "--model-type", f"preflight skipped: --model-type {backend} is a serve backend "
                                                    "whose flags this help does not print; the flags are not checked")]
        out = section  # `sglang serve --help` prints the diffusion server's flags too: only this backend's count
    options = parse_help(out) if code == 0 else {}
    if code is None:
        if found.remote:
            return [_remote_unchecked(found.remote, f"`{shown} --help` did not finish within {timeout_s:g} s")]
        return [Problem("error", "", f"`{shown} --help` did not finish within {timeout_s:g} s"
                                     " (a command that does not know --help may have started instead)")]
    if not options:
        if found.remote:
            # the host, the container or the connection may be what failed, not SGLang: the
            # launch itself will say, and its log is watched
            last = next((ln.strip() for ln in reversed(out.splitlines()) if ln.strip()), "")
            why = f"failed (exit {code}): {last[:200]}" if code != 0 and last else help_failure(code, out)
            return [_remote_unchecked(found.remote, f"`{shown} --help` {why}")]
        return [_help_failed(shown, code, out, classify(out) if classify is not None else None)]
    # This server's own options say which abbreviations are secret flags (`--api-ke KEY`).
    from tuiapp.common.redact import remember, secret_values

    remember(*secret_values(flags, options=options))
    return check_flags(flags, options) + missing_required(flags, out)


def _remote_unchecked(where: str, why: str) -> Problem:
    """A launcher over ssh or in a container whose --help could not be read: said, not refused."""
    return Problem("warning", "", f"flags not checked through {where}: {why}; the launch goes on",
                   "--no-preflight skips the check")


# What a --help that died of a known failure is reported as: the failure, not "is SGLang installed?"
_KNOWN_FAILURES = {"oom", "nccl", "jit_arch", "keyerror", "assertion", "crash"}
_MISSING_SGLANG = re.compile(r"No module named '?sglang(?:[.'\s]|$)|command not found")


def _help_failed(shown: str, code: int | None, out: str, failure: tuple[str, str] | None) -> Problem:
    if failure is not None and failure[0] in _KNOWN_FAILURES:
        kind, line = failure
        return Problem("error", "", f"`{shown} --help` failed with {kind} (exit {code}): {line[:200]}", kind=kind)
    why = help_failure(code, out)
    if failure is not None and _EXCEPTION_LINE.match(failure[1]) and not _MISSING_SGLANG.search(out):
        # an import error or another exception of the installed server: say it, with no install hint
        return Problem("error", "", f"cannot check flags: `{shown} --help` {why}", "--no-preflight skips the check",
                       kind="error")
    return Problem("error", "", f"cannot check flags: `{shown} --help` {why}",
                   "is SGLang installed in this environment? --no-preflight skips the check")
