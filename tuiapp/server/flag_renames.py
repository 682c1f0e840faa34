"""SGLang flag spellings that changed between versions, each with the change that made it.

Both directions: the old spelling on a new server and the new spelling on an old one. Per
flag, candidates newest first; preflight offers the first whose flag the checked server's
``--help`` lists (so a 0.5.23 server gets the 0.5.23 spelling, main gets main's), or one whose
replacement is None (drop the flag). Sources: SGLang's main-branch ``server_args.py``
(its ``Deprecated*Action`` registrations) and the pull requests named.
"""

from __future__ import annotations

from dataclasses import dataclass

CUDA_GRAPH_REFACTOR = "sgl-project/sglang#23906"  # CUDA graph runner/backend refactor (RFC #23004), 2026-05
DEPRECATED_CLEANUP = "sgl-project/sglang#38375"  # deprecated flags with a replacement removed, 2026-09
STREAM_OUTPUT_RENAME = "sgl-project/sglang#20614"  # stream_output -> incremental_streaming_output, 2026-03


@dataclass(frozen=True)
class Rename:
    replacement: str | None  # what to type instead (None: drop the flag)
    why: str
    pr: str | None = None  # the SGLang pull request that made the change

    @property
    def text(self) -> str:
        return f"{self.why}, {self.pr}" if self.pr else self.why

    @property
    def first_flag(self) -> str | None:
        return self.replacement.split()[0].split("=", 1)[0] if self.replacement else None


def _r(replacement: str | None, why: str, pr: str | None = None) -> Rename:
    return Rename(replacement, why, pr)


RENAMES: dict[str, tuple[Rename, ...]] = {
    # 2026: per-phase CUDA graph backends (#23906); the old spellings stay as deprecated aliases
    # until #38375 removes those with a replacement
    "--disable-cuda-graph": (
        # 0.5.23's own deprecation note names these; main, where they are gone, the backends
        _r("--disable-decode-cuda-graph --disable-prefill-cuda-graph", "deprecated in SGLang 0.5.23"),
        _r("--cuda-graph-backend-decode=disabled --cuda-graph-backend-prefill=disabled",
           "deprecated for per-phase CUDA graph backends", CUDA_GRAPH_REFACTOR),
    ),
    "--disable-piecewise-cuda-graph": (
        _r("--cuda-graph-backend-prefill=disabled", "piecewise CUDA graph is a prefill backend now (on by default)",
           CUDA_GRAPH_REFACTOR),),
    "--enable-breakable-cuda-graph": (
        _r("--cuda-graph-backend-prefill=breakable", "a prefill backend now", CUDA_GRAPH_REFACTOR),),
    "--enforce-piecewise-cuda-graph": (
        _r("--cuda-graph-backend-prefill=tc_piecewise", "removed; an explicit prefill backend skips the auto-disable",
           DEPRECATED_CLEANUP),),
    "--piecewise-cuda-graph-max-tokens": (
        _r("--cuda-graph-max-bs-prefill", "renamed with the per-phase CUDA graph flags", CUDA_GRAPH_REFACTOR),),
    "--piecewise-cuda-graph-tokens": (
        _r("--cuda-graph-bs-prefill", "renamed with the per-phase CUDA graph flags", CUDA_GRAPH_REFACTOR),),
    "--piecewise-cuda-graph-compiler": (
        _r("--cuda-graph-tc-compiler", "renamed with the per-phase CUDA graph flags", CUDA_GRAPH_REFACTOR),),
    "--stream-output": (_r("--incremental-streaming-output", "renamed", STREAM_OUTPUT_RENAME),),
    "--speculative-dflash-draft-window-size": (
        _r("--speculative-draft-window-size", "renamed for every draft algorithm; the hidden alias was removed",
           DEPRECATED_CLEANUP),),
    # 0.5.23
    "--cuda-graph-max-bs": (_r("--cuda-graph-max-bs-decode", "split into -decode/-prefill in SGLang 0.5.23"),),
    "--cuda-graph-bs": (_r("--cuda-graph-bs-decode", "split into -decode/-prefill in SGLang 0.5.23"),),
    "--enable-flashinfer-allreduce-fusion": (
        _r("--flashinfer-allreduce-fusion-backend auto", "deprecated in SGLang 0.5.23"),),
    "--enable-dp-attention": (_r("--attn-dp-size", "replaced by --attn-dp-size N in SGLang 0.5.23"),),
    "--model": (_r("--model-path", "older SGLang has only --model-path"),),
    "--speculative-draft-model": (
        _r("--speculative-draft-model-path", "older SGLang has only the -path spelling"),),
    "--tensor-parallel-size": (_r("--tp-size", "older SGLang has only --tp-size"),),
    # new spellings on an older server
    "--incremental-streaming-output": (
        _r("--stream-output", "SGLang before the rename has --stream-output", STREAM_OUTPUT_RENAME),),
    "--speculative-draft-window-size": (
        _r("--speculative-dflash-draft-window-size", "older SGLang: a DFlash-only flag"),),
    "--cuda-graph-backend-decode": (
        _r("--disable-decode-cuda-graph", "SGLang 0.5.23 has only on/off for decode graphs", CUDA_GRAPH_REFACTOR),
        _r("--disable-cuda-graph", "older SGLang has one --disable-cuda-graph"),
    ),
    "--cuda-graph-backend-prefill": (
        _r("--disable-piecewise-cuda-graph", "before the per-phase backends: on/off flags", CUDA_GRAPH_REFACTOR),),
    "--cuda-graph-tc-compiler": (
        _r("--piecewise-cuda-graph-compiler", "before the per-phase CUDA graph flags", CUDA_GRAPH_REFACTOR),),
    "--cuda-graph-max-bs-decode": (
        _r("--cuda-graph-max-bs", "SGLang before 0.5.23 has one --cuda-graph-max-bs"),),
    "--cuda-graph-bs-decode": (_r("--cuda-graph-bs", "SGLang before 0.5.23 has one --cuda-graph-bs"),),
    "--cuda-graph-max-bs-prefill": (
        _r("--piecewise-cuda-graph-max-tokens", "before the per-phase CUDA graph flags", CUDA_GRAPH_REFACTOR),
        _r(None, "SGLang before 0.5.23 has no prefill CUDA graphs; drop it"),
    ),
    "--cuda-graph-bs-prefill": (
        _r("--piecewise-cuda-graph-tokens", "before the per-phase CUDA graph flags", CUDA_GRAPH_REFACTOR),
        _r(None, "SGLang before 0.5.23 has no prefill CUDA graphs; drop it"),
    ),
    "--disable-decode-cuda-graph": (
        _r("--cuda-graph-backend-decode=disabled", "deprecated for per-phase CUDA graph backends", CUDA_GRAPH_REFACTOR),
        _r("--disable-cuda-graph", "SGLang before 0.5.23 has one --disable-cuda-graph"),
    ),
    "--flashinfer-allreduce-fusion-backend": (
        _r("--enable-flashinfer-allreduce-fusion",
           "SGLang before 0.5.23 has a boolean --enable-flashinfer-allreduce-fusion"),),
    "--attn-dp-size": (_r("--enable-dp-attention", "SGLang before 0.5.23: --enable-dp-attention with --dp-size N"),),
}

# Deprecated shims a server may accept without listing them in --help: a warning, not an error.
DEPRECATED_SHIMS = {"--disable-cuda-graph", "--enable-flashinfer-allreduce-fusion", "--enable-dp-attention",
                    "--speculative-dflash-draft-window-size"}


def rename_for(flag: str, options: dict[str, str]) -> Rename | None:
    """The first candidate this server can take: its flag is in ``options``, or it drops the flag."""
    for candidate in RENAMES.get(flag, ()):
        if candidate.first_flag is None or candidate.first_flag in options:
            return candidate
    return None


def first_reason(flag: str) -> str:
    """Why ``flag`` changed, when no candidate fits the server (its newest entry)."""
    return RENAMES[flag][0].text
