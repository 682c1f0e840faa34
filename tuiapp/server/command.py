"""The server command line: the default command and what we read back out of it.

We read ``--host``/``--port``/``--api-key`` the way argparse would (both ``--flag value``
and ``--flag=value``; the last occurrence wins) so the URL we poll is the one the server
binds, without importing SGLang.
"""

from __future__ import annotations

import sys

DEFAULT_COMMAND = "python -m sglang.launch_server"  # as a plan or a config names it (the launcher runs it with this Python)
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 30000


def default_server_command() -> list[str]:
    return [sys.executable, "-m", "sglang.launch_server"]


def build_server_command(args: list[str] | None) -> list[str]:
    """The argv to launch.

    No args: ``python -m sglang.launch_server``. Args that start with a flag (``--model-path
    M ...``) are appended to that default, so ``tuiapp launch -- --model-path M`` works.
    Anything else is taken as the whole command (``sglang serve ...``, ``python -m ...``).
    """
    if not args:
        return default_server_command()
    if args[0].startswith("-"):
        return [*default_server_command(), *args]
    return list(args)


def flag_value(argv: list[str], *names: str) -> str | None:
    """The value of the last ``--name value`` or ``--name=value`` in ``argv``, else None."""
    value: str | None = None
    i = 0
    while i < len(argv):
        token = argv[i]
        if token == "--":
            break
        name, eq, inline = token.partition("=")
        if name in names:
            if eq:
                value = inline
            elif i + 1 < len(argv):
                value = argv[i + 1]
                i += 1
        i += 1
    return value


def server_host(argv: list[str]) -> str:
    return flag_value(argv, "--host") or DEFAULT_HOST


def server_port(argv: list[str]) -> int:
    raw = flag_value(argv, "--port")
    if raw is None:
        return FAMILY_PORTS.get(server_family(argv) or "", DEFAULT_PORT)
    try:
        return int(raw)
    except ValueError:
        raise ValueError(f"--port {raw!r} is not a number") from None


def connect_host(host: str) -> str:
    """Where a client on this machine reaches a server bound to ``host``."""
    if host in ("0.0.0.0", ""):
        return "127.0.0.1"
    if host == "::":
        return "::1"
    return host


def server_url(argv: list[str]) -> str:
    """``http://host:port`` to reach the server ``argv`` would start (wildcards -> loopback)."""
    host = connect_host(server_host(argv))
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{server_port(argv)}"


def api_key_from(argv: list[str]) -> str | None:
    """``--api-key``'s value as the server's argparse reads it: ``--api-ke KEY`` too."""
    from tuiapp.common.redact import SGLANG_SECRET_FLAGS

    names = {"--api-key"} | {
        "--api-key"[:n] for n in range(5, len("--api-key"))
        if not any(o.startswith("--api-key"[:n]) for o in SGLANG_SECRET_FLAGS if o != "--api-key")
    }
    return flag_value(argv, *names)


# Servers that are not SGLang but speak OpenAI's API, by the command that starts them, and
# the port each listens on by default.
FAMILY_PORTS = {"vllm": 8000, "transformers": 8000}
_SERVE_FAMILIES = ("sglang", "vllm", "transformers")


def _serve_index(argv: list[str]) -> int | None:
    """Where ``serve`` follows ``sglang``, ``vllm`` or ``transformers`` (any path or wrapper)."""
    for i in range(1, len(argv)):
        if argv[i] == "serve" and argv[i - 1].rsplit("/", 1)[-1] in _SERVE_FAMILIES:
            return i
    return None


def server_family(argv: list[str]) -> str | None:
    """"sglang", "vllm" or "transformers" when the command starts one of them, else None."""
    i = _serve_index(argv)
    if i is not None:
        return argv[i - 1].rsplit("/", 1)[-1]
    joined = " ".join(argv)
    if "sglang.launch_server" in joined or "tuiapp.sim.server" in joined:
        return "sglang"
    if "vllm.entrypoints" in joined:
        return "vllm"
    return None


def served_model(argv: list[str]) -> str | None:
    """The model name requests must carry, read from the server command: its
    ``--served-model-name``, else ``--model-path``/``--model``, else the positional model of
    ``sglang serve``, ``vllm serve`` or ``transformers serve`` (the word right after ``serve``)."""
    named = flag_value(argv, "--served-model-name")
    if named:
        return named.split()[0]
    path = flag_value(argv, "--model-path", "--model")
    if path:
        return path
    i = _serve_index(argv)
    if i is not None and i + 1 < len(argv) and not argv[i + 1].startswith("-"):
        return argv[i + 1]
    return None
