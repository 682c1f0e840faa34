"""``sglang serve`` as SGLang's main branch parses it (``python/sglang/cli/serve.py``).

``sglang serve <model> [flags]`` takes the model path as its first positional argument (it
becomes ``--model-path``), and ``--model-type BACKEND`` (``auto``, ``llm``, ``diffusion`` or an
out-of-tree backend from the ``sglang.serve_backends`` entry points) picks the server; neither
reaches the server's own parser. ``sglang serve --help`` prints a general usage, then
``--- Help for Standard Language Model Server ---`` and the LLM server's argparse help, then
``--- Help for Diffusion Model Server ---`` and the diffusion server's: preflight reads only the
section of the backend that will run, so a diffusion-only flag is not taken for an LLM flag.
"""

from __future__ import annotations

LLM_MARK = "--- Help for Standard Language Model Server ---"
DIFFUSION_MARK = "--- Help for Diffusion Model Server ---"


def serve_flags(flags: list[str]) -> tuple[list[str], str]:
    """(the flags the backend's parser sees, the backend named by --model-type, "auto" if none)."""
    backend = "auto"
    out: list[str] = []
    i = 0
    while i < len(flags):
        token = flags[i]
        if token == "--model-type" and i + 1 < len(flags):
            backend = flags[i + 1]
            i += 2
            continue
        if token.startswith("--model-type="):
            backend = token.split("=", 1)[1] or backend
            i += 1
            continue
        out.append(token)
        i += 1
    if out and not out[0].startswith("-"):
        out = ["--model-path", *out]  # what serve.py does with `sglang serve <model>`
    return out, backend


def help_section(text: str, backend: str) -> str | None:
    """The part of ``sglang serve --help`` for ``backend``: the whole text when it has no
    sections (one backend's help, or an older ``sglang serve``), None for a backend whose
    flags it does not print."""
    if LLM_MARK not in text:
        return text if backend in ("auto", "llm") or DIFFUSION_MARK not in text else None
    _, _, rest = text.partition(LLM_MARK)
    llm, _, diffusion = rest.partition(DIFFUSION_MARK)
    if backend in ("auto", "llm"):  # auto falls back to the LLM server for every non-diffusion model
        return llm
    if backend == "diffusion" and DIFFUSION_MARK in text:
        return diffusion
    return None
