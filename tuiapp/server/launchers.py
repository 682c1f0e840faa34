"""Which server command is this: an SGLang launcher preflight may ask for ``--help``, or not.

Appending ``--help`` to a program we do not know may start real work instead: a plain
PyTorch script ignores it and fills the GPU, ``srun`` submits a cluster job, ``docker run``
starts a container. So preflight runs only launchers it recognises (``sglang serve``,
``python -m sglang.launch_server``, tuiapp's simulator), also when they sit inside an
environment wrapper (``env``, ``uv run``, ``conda run``), inside ``torchrun``/``srun``-style
wrappers (the launcher is run alone, never the wrapper), inside ``bash -c "..."`` or a shell
script (read, never run), or as the command of an SGLang ``docker run`` image. Anything else
is not run at all, and the reason is said.

A launcher on another machine or in a running container (``ssh HOST ...``, ``docker exec C ...``,
``kubectl exec POD -- ...``) is read from the command, never run here: its ``--help`` goes through
the same wrapper, so the flags are checked against the SGLang that will serve, not the local one.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
from dataclasses import dataclass

# `python -m MODULE` launchers whose --help is argparse's list of SGLang's flags.
SGLANG_MODULES = {
    "sglang.launch_server": "python -m sglang.launch_server",
    "tuiapp.sim.server": "tuiapp's simulator",
}
# Wrappers that only set up an environment and exec the rest: kept in front of --help,
# since the launcher may exist only inside that environment.
_ENV_WRAPPERS = {"env", "uv", "conda", "mamba", "micromamba", "pixi", "poetry"}
_SHELLS = {"sh", "bash", "dash", "zsh", "ksh"}
_CONTAINER_TOOLS = {"docker", "podman"}
_TORCHRUN_MODULES = {"torch.distributed.run", "torch.distributed.launch"}
# torchrun's options that take no value (every other option takes one)
_TORCHRUN_BOOLS = {"--standalone", "--no-python", "--no_python", "-m", "--module", "--run-path",
                   "--run_path", "--use-env", "--use_env"}
# `docker run` options that take no value (every other option takes one, unless `--opt=value`)
_DOCKER_BOOLS = {"--rm", "--detach", "--interactive", "--tty", "--privileged", "--init", "--publish-all",
                 "--read-only", "--no-healthcheck", "--oom-kill-disable", "--quiet", "--sig-proxy"}
_DOCKER_SHORT_BOOLS = set("ditPq")
_PYTHON = re.compile(r"^(?:python|pypy)[\d.]*$")
_PY_OPTS_WITH_ARG = {"-W", "-X", "-Q"}
_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
_SEPARATORS = {";", "&&", "||", "|", "&", "(", ")", "{", "}"}
_SCRIPT_LIMIT_BYTES = 1 << 18
_MAX_DEPTH = 6


@dataclass(frozen=True)
class Launcher:
    """A recognised launcher: ``help_command + ["--help"]`` is what preflight may run."""

    help_command: list[str]
    flags: list[str]  # the server's flags as given, to check against its --help
    name: str  # "sglang serve", "python -m sglang.launch_server", ...
    via: str = ""  # where it was found: "torchrun", "bash -c", "script run.sh", "docker run IMAGE"
    remote: str = ""  # where --help runs when not here: "ssh gpu-node", "docker exec sglang", "kubectl exec pod"


@dataclass(frozen=True)
class NotChecked:
    reason: str


def find_launcher(argv: list[str], _depth: int = 0) -> Launcher | NotChecked:
    """The SGLang launcher in ``argv`` that preflight may ask for ``--help``, or why there is none."""
    if not argv:
        return NotChecked("no server command given")
    if _depth > _MAX_DEPTH:
        return NotChecked("the command nests too many wrappers to read")
    prog = os.path.basename(argv[0])
    direct = _direct(argv)
    if direct is not None:
        return direct
    if prog in _ENV_WRAPPERS:
        return _env_wrapper(argv, prog, _depth)
    if prog in _SHELLS:
        return _shell(argv, _depth)
    if prog in _CONTAINER_TOOLS and len(argv) > 1 and argv[1] == "run":
        return _container(argv)
    remote = _remote(argv, prog, _depth)
    if remote is not None:
        return remote
    if prog == "torchrun" or (_PYTHON.match(prog) and _python_module(argv)[0] in _TORCHRUN_MODULES):
        return _torchrun(argv, _depth)
    if _PYTHON.match(prog):
        module, i = _python_module(argv)
        what = f"python -m {module}" if module else (f"the Python script {argv[i]}" if i < len(argv) else "python")
        return NotChecked(f"{what} is not an SGLang launcher")
    inner = _embedded(argv, _depth)
    if inner is not None:
        return _via(inner, prog)
    script = _shell_script_path(argv[0])
    if script is not None:
        return _script(script, _depth)
    return NotChecked(f"{prog} is not an SGLang launcher")


def _direct(argv: list[str]) -> Launcher | None:
    """``sglang serve ...`` or ``python [opts] -m <SGLang module> ...`` as the command itself."""
    prog = os.path.basename(argv[0])
    if prog == "sglang" and len(argv) > 1 and argv[1] == "serve":
        return Launcher(list(argv[:2]), list(argv[2:]), "sglang serve")
    if _PYTHON.match(prog):
        module, i = _python_module(argv)
        if module in SGLANG_MODULES:
            return Launcher(list(argv[:i + 1]), list(argv[i + 1:]), SGLANG_MODULES[module])
    return None


def _python_module(argv: list[str]) -> tuple[str | None, int]:
    """``(module, index of the module token)`` of ``python [opts] -m MODULE``; else ``(None,
    index of the script or -c)``."""
    i = 1
    while i < len(argv):
        token = argv[i]
        if token == "-m" and i + 1 < len(argv):
            return argv[i + 1], i + 1
        if token.startswith("-m") and len(token) > 2:
            return token[2:], i
        if token == "-c" or not token.startswith("-") or token == "-":
            return None, i
        i += 2 if token in _PY_OPTS_WITH_ARG else 1
    return None, i


def _via(found: Launcher, how: str) -> Launcher:
    return Launcher(found.help_command, found.flags, found.name, f"{how} > {found.via}" if found.via else how)


def _env_wrapper(argv: list[str], prog: str, depth: int) -> Launcher | NotChecked:
    """``env A=B ...``, ``uv run ...``, ``conda run -n X ...``: the wrapper stays in front."""
    start = _env_wrapper_end(argv, prog)
    if start is None or start >= len(argv):
        return NotChecked(f"{prog} runs no command that can be read")
    inner = find_launcher(argv[start:], depth + 1)
    if isinstance(inner, NotChecked):
        return inner
    if inner.help_command == list(argv[start:start + len(inner.help_command)]):
        # the launcher is what the wrapper execs: run it inside the same environment
        return Launcher([*argv[:start], *inner.help_command], inner.flags, inner.name,
                        f"{prog}{' run' if prog != 'env' else ''}")
    return _via(inner, prog)


def _env_wrapper_end(argv: list[str], prog: str) -> int | None:
    """Index of the command an environment wrapper execs, None when it is no exec form."""
    i = 1
    if prog == "env":
        while i < len(argv):
            token = argv[i]
            if token in ("-u", "--unset", "-C", "--chdir", "-S", "--split-string"):
                i += 2
            elif token.startswith("-") or _ASSIGNMENT.match(token):
                i += 1
            else:
                return i
        return i
    if len(argv) < 2 or argv[1] != "run":
        return None
    i = 2
    while i < len(argv):
        token = argv[i]
        if token == "--":
            return i + 1
        if not token.startswith("-"):
            return i
        if "=" in token or token in ("--no-capture-output", "--live-stream", "--no-sync", "--frozen", "--locked",
                                     "--isolated", "--no-project", "--all-extras", "-q", "--quiet", "-v", "--verbose",
                                     "--dev", "--no-dev", "--offline"):
            i += 1
        else:
            i += 2  # -n NAME, -p PREFIX, --python X, --with PKG, --extra X, ...
    return i


def _torchrun(argv: list[str], depth: int) -> Launcher | NotChecked:
    """``torchrun [opts] -m sglang.launch_server ...``: the module alone, with torchrun's Python."""
    prog = os.path.basename(argv[0])
    if prog == "torchrun":
        python, i = _python_beside(argv[0]), 1
    else:
        python, (_, i) = argv[0], _python_module(argv)
        i += 1
    module_mode = no_python = False
    while i < len(argv):
        token = argv[i]
        if not token.startswith("-"):
            break
        if token in ("-m", "--module"):
            module_mode = True
        elif token in ("--no-python", "--no_python"):
            no_python = True
        i += 1 if "=" in token or token in _TORCHRUN_BOOLS else 2
    if i >= len(argv):
        return NotChecked("torchrun runs no program that can be read")
    if no_python:
        inner = find_launcher(argv[i:], depth + 1)
        return _via(inner, "torchrun") if isinstance(inner, Launcher) else inner
    if module_mode and argv[i] in SGLANG_MODULES:
        return Launcher([python, "-m", argv[i]], list(argv[i + 1:]), SGLANG_MODULES[argv[i]], "torchrun")
    what = f"the module {argv[i]}" if module_mode else f"the script {argv[i]}"
    return NotChecked(f"torchrun runs {what}, not an SGLang launcher")


def _python_beside(program: str) -> str:
    """The interpreter a console script such as torchrun runs with (its #! line), else python3."""
    path = shutil.which(program) or program
    try:
        with open(path, "rb") as fh:
            first = fh.readline(512).decode("utf-8", "replace").strip()
    except OSError:
        return "python3"
    if first.startswith("#!"):
        words = first[2:].split()
        if words and _PYTHON.match(os.path.basename(words[-1] if os.path.basename(words[0]) == "env" else words[0])):
            return words[-1] if os.path.basename(words[0]) == "env" else words[0]
    return "python3"


def _shell(argv: list[str], depth: int, remote: bool = False) -> Launcher | NotChecked:
    """``bash -c "..."`` (the text read, never run) or ``bash script.sh`` (the file read)."""
    prog = os.path.basename(argv[0])
    i = 1
    while i < len(argv) and argv[i].startswith("-"):
        if not argv[i].startswith("--") and "c" in argv[i][1:]:  # -c, -lc, -ec...
            if i + 1 >= len(argv):
                return NotChecked(f"{prog} -c has no command text")
            return _in_text(argv[i + 1], f"{prog} -c", depth, remote=remote)
        i += 1
    if i >= len(argv):
        return NotChecked(f"{prog} reads its commands from stdin; there is nothing to check")
    if remote:
        return NotChecked(f"{prog} runs the script {argv[i]} over there, which cannot be read from here")
    return _script(argv[i], depth)


def _shell_script_path(program: str) -> str | None:
    """``program`` when it is a shell script on disk (by #! line or .sh name), else None."""
    path = program if os.sep in program else shutil.which(program)
    if not path or not os.path.isfile(path):
        return None
    if program.endswith(".sh"):
        return path
    try:
        with open(path, "rb") as fh:
            first = fh.readline(256)
    except OSError:
        return None
    if not first.startswith(b"#!"):
        return None
    words = first[2:].decode("utf-8", "replace").split()
    names = [os.path.basename(w) for w in words[:2]]
    return path if any(n in _SHELLS for n in names) else None


def _script(path: str, depth: int) -> Launcher | NotChecked:
    name = os.path.basename(path)
    try:
        with open(path, "rb") as fh:
            data = fh.read(_SCRIPT_LIMIT_BYTES)
    except OSError as exc:
        return NotChecked(f"the shell script {name} cannot be read ({exc.strerror or exc})")
    return _in_text(data.decode("utf-8", "replace"), f"script {name}", depth,
                    none=f"the shell script {name} shows no SGLang launcher (a script is never run for preflight)")


def _in_text(text: str, how: str, depth: int, none: str | None = None, remote: bool = False) -> Launcher | NotChecked:
    """The first SGLang launcher among the commands of a shell text (run on another machine or
    in a container when ``remote``: its scripts cannot be read from here)."""
    for command in shell_commands(text):
        found = _remote_inner(command, how, depth) if remote else find_launcher(command, depth + 1)
        if isinstance(found, Launcher):
            return _via(found, how)
    return NotChecked(none or f"{how} shows no SGLang launcher")


def shell_commands(text: str) -> list[list[str]]:
    """The simple commands of a shell text: continuations joined, comments dropped, split at
    ``;``, ``&&``, ``|``..., leading ``VAR=value`` and ``exec`` removed. Variables stay unexpanded."""
    commands: list[list[str]] = []
    for line in text.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        try:
            tokens = list(lexer)
        except ValueError:  # an unclosed quote: a line we cannot read
            continue
        current: list[str] = []
        for token in [*tokens, ";"]:
            if token in _SEPARATORS or set(token) <= set(";&|()"):
                while current and (_ASSIGNMENT.match(current[0]) or current[0] in ("exec", "time", "nohup")):
                    current.pop(0)
                if current:
                    commands.append(current)
                current = []
            else:
                current.append(token)
    return commands


def _embedded(argv: list[str], depth: int) -> Launcher | None:
    """A launcher further along an unknown wrapper's argv (``srun -N1 python -m sglang...``,
    ``numactl ... sglang serve``): found by its own shape, run without the wrapper."""
    for j in range(1, len(argv)):
        prog = os.path.basename(argv[j])
        if prog == "sglang" or _PYTHON.match(prog) or prog == "torchrun":
            found = find_launcher(argv[j:], depth + 1)
            if isinstance(found, Launcher):
                return found
    return None


def _container(argv: list[str]) -> Launcher | NotChecked:
    """``docker run [opts] IMAGE [command]``: checked only for an SGLang image running an SGLang
    launcher, as ``docker run --rm IMAGE <launcher> --help``."""
    i = 2
    while i < len(argv):
        token = argv[i]
        if not token.startswith("-") or token == "-":
            break
        short_bools = token.startswith("-") and not token.startswith("--") and set(token[1:]) <= _DOCKER_SHORT_BOOLS
        i += 1 if "=" in token or token in _DOCKER_BOOLS or short_bools else 2
    tool = os.path.basename(argv[0])
    if i >= len(argv):
        return NotChecked(f"{tool} run names no image")
    image = argv[i]
    repository = image.split("@", 1)[0].rsplit(":", 1)[0] if "/" in image or ":" in image else image
    if "sglang" not in repository.rsplit("/", 1)[-1].lower():
        return NotChecked(f"the container image {image} is not an SGLang image")
    inner = argv[i + 1:]
    if not inner:
        return NotChecked(f"{tool} run {image} runs the image's own entry point; its flags cannot be read")
    found = _direct(inner)
    if found is None:
        return NotChecked(f"{tool} run {image} runs {os.path.basename(inner[0])}, not an SGLang launcher")
    return Launcher([argv[0], "run", "--rm", image, *found.help_command], found.flags, found.name,
                    f"{tool} run {image}")


# ssh's options that take a value (`ssh -p 22 -i key host cmd`); every other one is a switch
_SSH_WITH_VALUE = set("BbcDEeFIiJLlmOoPpQRSWw")
# `docker exec` / `kubectl exec` options that take a value and that shape the command's
# environment (kept for --help); switches such as -i, -t, -d are dropped
_EXEC_KEEP = {"-e", "--env", "--env-file", "-u", "--user", "-w", "--workdir", "-c", "--container", "-n",
              "--namespace", "--context", "--kubeconfig", "--cluster", "-s", "--server"}
_EXEC_VALUE = _EXEC_KEEP | {"--detach-keys", "-f", "--filename", "--pod-running-timeout", "--token"}


def _remote(argv: list[str], prog: str, depth: int) -> Launcher | NotChecked | None:
    """``ssh HOST CMD``, ``docker|podman exec C CMD``, ``kubectl|oc exec POD -- CMD``: the SGLang
    launcher in CMD, with ``--help`` run through the same wrapper; None for other programs."""
    if prog == "ssh":
        return _ssh(argv, depth)
    if prog in _CONTAINER_TOOLS and len(argv) > 1 and argv[1] == "exec":
        return _exec(argv, 2, depth, kube=False)
    if prog in ("kubectl", "oc") and "exec" in argv[1:]:
        return _exec(argv, argv.index("exec", 1) + 1, depth, kube=True)
    return None


def _ssh(argv: list[str], depth: int) -> Launcher | NotChecked:
    i, opts = 1, []
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "-":
        token = argv[i]
        if token == "--":
            i += 1
            break
        # `-p 22` takes the next word; `-p22` and a run of switches (`-tt`, `-nT`) do not
        width = 2 if len(token) == 2 and token[1] in _SSH_WITH_VALUE else 1
        opts += argv[i:i + width]
        i += width
    if i >= len(argv):
        return NotChecked("ssh names no host")
    host = argv[i]
    if i + 1 >= len(argv):
        return NotChecked(f"ssh {host} runs a login shell, no command that can be read")
    # ssh hands the remote shell its words joined by spaces: read them as that shell would
    found = _in_text(" ".join(argv[i + 1:]), f"ssh {host}", depth, remote=True)
    if isinstance(found, NotChecked):
        return found
    wrapper = ["ssh", "-o", "BatchMode=yes", *opts, host]  # never a password prompt from a check
    return Launcher([*wrapper, shlex.join(found.help_command)], found.flags, found.name, found.via,
                    remote=f"ssh {host}")


def _exec(argv: list[str], i: int, depth: int, *, kube: bool) -> Launcher | NotChecked:
    tool = f"{os.path.basename(argv[0])} exec"
    head = list(argv[:i])
    target: str | None = None
    while i < len(argv):
        token = argv[i]
        if token == "--":
            i += 1
            break
        name = token.split("=", 1)[0]
        if token.startswith("-") and token != "-":
            if name in _EXEC_VALUE and "=" not in token:
                if name in _EXEC_KEEP:
                    head += argv[i:i + 2]
                i += 2
            else:
                if name in _EXEC_KEEP:
                    head.append(token)
                i += 1  # a switch (-i, -t, -it, --tty) or --opt=value
            continue
        if target is None:
            target = token
            head.append(token)
            i += 1
            continue
        break  # the command (kubectl's old form has no "--" before it)
    if target is None:
        return NotChecked(f"{tool} names no {'pod' if kube else 'container'}")
    inner = argv[i:]
    if not inner:
        return NotChecked(f"{tool} {target} runs no command")
    found = _remote_inner(inner, f"{tool} {target}", depth)
    if isinstance(found, NotChecked):
        return found
    found = _via(found, f"{tool} {target}")
    return Launcher([*head, *(["--"] if kube else []), *found.help_command], found.flags, found.name, found.via,
                    remote=f"{tool} {target}")


def _remote_inner(inner: list[str], where: str, depth: int) -> Launcher | NotChecked:
    """The launcher of a command that runs on another machine or in a container: a script or
    torchrun's interpreter there cannot be read from here, so those are not checked."""
    prog = os.path.basename(inner[0])
    if prog in _SHELLS:
        return _shell(inner, depth + 1, remote=True)
    if prog == "torchrun" or prog.endswith(".sh"):
        return NotChecked(f"{where} runs {prog}, which cannot be read from here")
    found = find_launcher(inner, depth + 1)
    if isinstance(found, Launcher) and "script" in found.via:
        return NotChecked(f"{where} runs {prog}, a script that cannot be read from here")
    return found
