"""The campaign model: everything the simulator believes about the modelled server, in one place.

The reference campaign (docs/campaign.md §1, §4): Kimi-K2.5 (INT4 MoE, 61 layers, hidden 7168) on
8x RTX PRO 6000 Blackwell (SM120, 96 GB, PCIe Gen5 x16, no NVLink), tensor parallel 8.
:func:`plan_for` turns resolved server flags plus environment into a :class:`Plan`: the
decode step time, speculative acceptance, per-GPU memory, PCIe bytes per step, and the
failure (if any) the real server hit with that configuration. :func:`expected_tok_s` is
the pure "what should a single stream measure" function tests and benchmarks use.

Decode step at batch 1, tensor parallel 8 (milliseconds):

- new baseline (cuda-graph max bs 128, mem fraction auto 0.78, 1 decode step): 1000/89.5
- the +9% of the new baseline is split among the three knobs as additive step costs:
  ``--cuda-graph-max-bs 512``: +0.550 ms (larger graph pool, padded small batches),
  ``--num-continuous-decode-steps 4``: +0.350 ms (chunks of 4 tokens, scheduler stalls),
  ``--mem-fraction-static 0.88``: +0.122 ms (bigger KV pool to index), so one-knob trials give
  85.30 / 86.78 / 88.53 tok/s and all three give 82.00 tok/s. Intermediate values scale
  with log2(max_bs/128), (steps-1)/3 and (fraction-0.78)/0.10 (never below zero).
- no decode CUDA graph: x1.6 (55.9 tok/s at baseline knobs).
- custom all-reduce forced on PCIe (env ``SGLANG_FORCE_CUSTOM_ALLREDUCE=1``, the
  simulator's trigger; real SGLang disables custom AR on >2 PCIe-only GPUs): +15.143 ms
  (122 one-shot all-to-all allreduces per step contending on the PCIe switch) -> 38.0 tok/s.
- EAGLE-3 (``--speculative-algorithm EAGLE3``): each verify step costs the target step
  plus 30.0 ms of verify-pass allreduces (122 x ~245 us) plus 4.8 ms per draft step; with
  the auto (3 steps, topk 1, 4 draft tokens) a step is 55.57 ms. Each draft token is
  accepted with p=0.81 (a chain stops at the first rejection), so accept length averages
  1+p+p^2+p^3 = 2.997 and the client sees 53.94 tok/s. Accept lengths are drawn per step
  and per request from a seeded low-discrepancy sequence (engine.AcceptSampler) so even a
  short run averages to the model (within 0.7% after 85 steps).
- batching: step(B) = step(1) * (1 + 0.0025 * (B' - 1)) (mild growth, +16% at 64), where B' is
  B padded up to the next captured graph size while B <= the decode graphs' max bs; a batch
  above ``--cuda-graph-max-bs`` (or ``-decode``) runs eagerly: the no-graph step (x1.6) at B.
  So max bs 128 wins at batch 1 (89.5 vs 85.3 tok/s per stream) and loses above 128.
- prefill (TTFT): 60 ms + 0.04 ms per uncached prompt token (+6 ms draft prefill with spec)
  per pass of at most ``--chunked-prefill-size`` tokens (8192).
- KV pool admission and retraction follow SGLang's scheduler (see engine.py): a request is
  admitted when its input plus new_token_ratio x its max_new_tokens fits beside the running
  requests' reservations; a decode step that does not fit retracts requests.
"""

from __future__ import annotations

import bisect
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass

MIB = 1 << 20
GIB = 1 << 30

# ---------------------------------------------------------------- the box
GPU_NAME = "NVIDIA RTX PRO 6000 Blackwell"
GPU_MEM_TOTAL_BYTES = 97887 * MIB  # what NVML reports for the 96 GB part
GPU_MEM_RESERVED_BYTES = 585 * MIB  # NVML v2 "reserved" (driver/firmware)
GPU_SM_MAJOR = 12
GPU_POWER_LIMIT_W = 600.0  # the 600 W board limit NVML enforces on this part
PCIE_GEN = 5
PCIE_WIDTH = 16
# What the link carries per direction after 128b/130b coding: no modelled rate goes above it.
PCIE_LINK_BYTES_PER_S = 3.938e9 * PCIE_WIDTH
# torch's view: NVML total minus the driver reserve; SGLang's "avail mem" is free memory
TORCH_TOTAL_GIB = (GPU_MEM_TOTAL_BYTES - GPU_MEM_RESERVED_BYTES) / GIB

# ---------------------------------------------------------------- the model
MODEL_ARCH = "KimiK25ForConditionalGeneration"
MODEL_TYPE = "kimi_k25"
WEIGHTS_TOTAL_GIB = 512.0  # INT4 experts + BF16 attention/shared, summed over ranks
DRAFT_WEIGHTS_GIB = 1.25  # EAGLE-3 draft per GPU
CONTEXT_GIB = 1.05  # CUDA context + NCCL buffers after distributed init
CUSTOM_AR_BUFFERS_GIB = 0.25
KV_BYTES_PER_TOKEN = (512 + 64) * 2 * 61  # MLA latent + rope, bf16, 61 layers
CONTEXT_LEN = 262144
NUM_LAYERS = 61
HIDDEN = 7168
ALLREDUCES_PER_FORWARD = 2 * NUM_LAYERS  # 122, as measured in the campaign
VOCAB_SIZE = 163840
EOS_TOKEN_ID = 163586
SGLANG_VERSION = "0.5.23"
NCCL_VERSION = "2.27.3"

# ---------------------------------------------------------------- timing (ms)
BASE_STEP_MS = 1000.0 / 89.5
MAX_BS_COST_MS = 0.550  # at max bs 512 vs 128
DECODE_STEPS_COST_MS = 0.350  # at 4 continuous decode steps vs 1
MEM_FRACTION_COST_MS = 1000.0 / 82.0 - BASE_STEP_MS - MAX_BS_COST_MS - DECODE_STEPS_COST_MS
NO_CUDA_GRAPH_FACTOR = 1.6
CUSTOM_AR_COST_MS = 1000.0 / 38.0 - BASE_STEP_MS
VERIFY_ALLREDUCE_MS = 30.0
DRAFT_STEP_MS = 4.8
BATCH_GROWTH = 0.0025
PREFILL_BASE_S = 0.060
PREFILL_PER_TOKEN_S = 0.00004
# SGLang's tokenizer manager hands requests to the scheduler one at a time (tokenize, pickle,
# ZMQ send: a serial stage in the HTTP process), so a burst reaches an idle scheduler spread
# out and its first request is prefilled alone. The real 0.5.23 CPU server splits a burst of
# 8 sent within 0.2 ms as 1 + 7 (docs/simulator.md). Without this stage the simulator batched
# a burst whole or split it by the client's sub-millisecond timing.
INGRESS_S = 0.0005
SPEC_PREFILL_EXTRA_S = 0.006
ACCEPT_P = 0.81

DEFAULT_MEM_FRACTION = 0.78
DEFAULT_MAX_BS = 128
CHUNKED_PREFILL_SIZE = 8192
MAX_PREFILL_TOKENS = 16384
# SGLang 0.5.23's scheduler constants (environ.py): the output-length estimate a request
# reserves at admission, its decay per decode step, and the headroom retraction restores
# (also the clip of max_new_tokens in the estimate, schedule_policy.py).
INIT_NEW_TOKEN_RATIO = 0.7
MIN_NEW_TOKEN_RATIO = INIT_NEW_TOKEN_RATIO * 0.14
NEW_TOKEN_RATIO_DECAY = (INIT_NEW_TOKEN_RATIO - MIN_NEW_TOKEN_RATIO) / 600
RETRACT_DECODE_STEPS = 20
CLIP_MAX_NEW_TOKENS = 4096

# ---------------------------------------------------------------- PCIe model
# NCCL ring allreduce with the LL protocol: each GPU sends (and receives) 2(n-1)/n of the
# buffer, and LL puts 8 bytes on the wire per 4 of payload.
NCCL_LL_WIRE_FACTOR = 2.0
# Forced custom allreduce: one-shot all-to-all, every GPU reads all peers' buffers, and the
# peers' flag polling keeps the switch busy while decoding (modelled per step time).
CUSTOM_AR_POLL_BYTES_PER_S = 14e9
HOST_BYTES_PER_STEP = 4096  # token ids and sampling results
IDLE_BYTES_PER_S = 20_000


@dataclass(frozen=True)
class MemoryPlan:
    """Per-GPU memory in GiB, in the order the startup stages allocate it."""

    context_gib: float
    weights_gib: float
    draft_weights_gib: float
    kv_gib: float
    graphs_gib: float
    custom_ar_gib: float
    total_gib: float = TORCH_TOTAL_GIB

    @property
    def used_after_weights_gib(self) -> float:
        return self.context_gib + self.custom_ar_gib + self.weights_gib + self.draft_weights_gib

    @property
    def used_ready_gib(self) -> float:
        return self.used_after_weights_gib + max(self.kv_gib, 0.0) + self.graphs_gib


@dataclass(frozen=True)
class Plan:
    """What the modelled server does with one configuration."""

    tp_size: int
    dp_size: int
    attn_dp: bool  # attention data parallel: the DP groups live inside the TP ranks
    ep_size: int
    ep_adjusted_from: int | None
    n_gpus: int
    cuda_graph: bool
    cuda_graph_max_bs: int
    capture_bs: list[int]
    mem_fraction_static: float
    decode_steps: int
    custom_ar: bool
    spec: bool
    spec_algorithm: str | None
    spec_num_steps: int
    spec_topk: int
    spec_draft_tokens: int
    spec_tokens_adjusted: bool
    step_s: float  # decode (or verify) step at batch 1
    accept_p: float
    mem: MemoryPlan
    kv_tokens: int
    max_running_requests: int
    chunked_prefill_size: int
    failure: str | None  # None = serves; else the name of the modelled failure (server.py)
    eager_step_s: float = 0.0  # the batch-1 step without decode CUDA graphs (0: = step_s)
    max_prefill_tokens: int = MAX_PREFILL_TOKENS
    # --sim-spec-accept: each draft position's acceptance given the one before it was accepted
    # (empty: accept_p at every position); --sim-spec-adaptive: every other verify step has a
    # budget of one draft fewer, as SGLang's adaptive step count (#21599) gives
    accept_rates: tuple[float, ...] = ()
    spec_adaptive: bool = False

    def position_rates(self) -> tuple[float, ...]:
        """Conditional acceptance of draft positions 1..spec_num_steps."""
        rates = self.accept_rates or (self.accept_p,)
        return tuple(rates[min(i, len(rates) - 1)] for i in range(self.spec_num_steps))

    def step_budget(self, verify_index: int) -> int:
        """Drafts a request's ``verify_index``-th verify step may accept."""
        if self.spec_adaptive and verify_index % 2:
            return max(self.spec_num_steps - 1, 1)
        return self.spec_num_steps

    @property
    def world_size(self) -> int:
        """Scheduler processes = GPUs used."""
        return self.tp_size if self.attn_dp else self.tp_size * self.dp_size

    @property
    def mean_accept_len(self) -> float:
        if not self.spec:
            return 1.0
        budgets = (self.step_budget(0), self.step_budget(1))
        return sum(_mean_length(self.position_rates()[:b]) for b in budgets) / 2

    @property
    def expected_tok_s(self) -> float:
        """Single-stream decode rate a client measures: (tokens-1)/(e2e-ttft)."""
        return self.mean_accept_len / self.step_s

    def uses_graph(self, batch: int) -> bool:
        """Whether a decode batch of this size replays a captured CUDA graph."""
        return self.cuda_graph and batch <= self.cuda_graph_max_bs

    def padded_batch(self, batch: int) -> int:
        """The captured size a graph batch is padded to (bisect of capture_bs)."""
        i = bisect.bisect_left(self.capture_bs, batch)
        return self.capture_bs[i] if i < len(self.capture_bs) else batch

    def step_s_for_batch(self, batch: int) -> float:
        if self.uses_graph(batch):
            return self.step_s * (1.0 + BATCH_GROWTH * max(self.padded_batch(batch) - 1, 0))
        base = self.eager_step_s or self.step_s
        return base * (1.0 + BATCH_GROWTH * max(batch - 1, 0))

    def prefill_s(self, new_tokens: int) -> float:
        """One prefill batch: a pass per chunk of --chunked-prefill-size tokens, back to back."""
        extra = SPEC_PREFILL_EXTRA_S if self.spec else 0.0
        new_tokens = max(new_tokens, 0)
        chunk = self.chunked_prefill_size
        passes = max(-(-new_tokens // chunk), 1) if chunk > 0 else 1
        return passes * (PREFILL_BASE_S + extra) + PREFILL_PER_TOKEN_S * new_tokens

    def pcie_bytes_per_step(self, batch: int) -> int:
        """Bytes each active GPU sends (and, symmetrically, receives) per decode step."""
        n = self.tp_size
        if n <= 1:
            return HOST_BYTES_PER_STEP
        tokens = batch * (self.spec_draft_tokens if self.spec else 1)
        size = tokens * HIDDEN * 2
        allreduces = ALLREDUCES_PER_FORWARD
        draft = 2 * self.spec_num_steps * batch * HIDDEN * 2 if self.spec else 0
        if self.custom_ar:
            per = (n - 1) * size * allreduces + (n - 1) * draft
            per += CUSTOM_AR_POLL_BYTES_PER_S * self.step_s_for_batch(batch)
        else:
            per = 2 * (n - 1) / n * NCCL_LL_WIRE_FACTOR * (size * allreduces + draft)
        return int(per) + HOST_BYTES_PER_STEP


def capture_bs_list(max_bs: int, spec: bool) -> list[int]:
    """SGLang's decode capture list (cuda_graph_hook.py), max_bs always appended."""
    if spec:
        cands = list(range(1, 9)) + list(range(10, 33, 2)) + list(range(40, 65, 4))
        cands += list(range(72, 257, 8)) + list(range(272, max_bs + 1, 16))
    else:
        cands = [1, 2, 4, 8, 12] + list(range(16, 257, 8)) + list(range(272, 512, 16))
        cands += list(range(512, max_bs + 1, 32))
    out = sorted({b for b in cands if b <= max_bs} | {max_bs})
    return out


def graphs_gib(max_bs: int, spec: bool, draft_tokens: int) -> float:
    base = 0.30 + 0.004 * max_bs
    if spec:
        return base * (1.0 + 0.15 * draft_tokens) + 0.25  # verify graphs + draft graphs
    return base


def _truthy(value: str | None) -> bool:
    return (value or "").strip().lower() in {"1", "true", "yes", "on"}


def step_ms_breakdown(
    max_bs: int, mem_fraction: float, decode_steps: int, cuda_graph: bool, custom_ar: bool
) -> float:
    """Target decode step at batch 1 in ms (no speculation)."""
    ms = BASE_STEP_MS
    if max_bs > DEFAULT_MAX_BS:
        ms += MAX_BS_COST_MS * math.log2(max_bs / DEFAULT_MAX_BS) / 2.0
    if mem_fraction > DEFAULT_MEM_FRACTION:
        ms += MEM_FRACTION_COST_MS * (mem_fraction - DEFAULT_MEM_FRACTION) / 0.10
    if decode_steps > 1:
        ms += DECODE_STEPS_COST_MS * (decode_steps - 1) / 3.0
    if not cuda_graph:
        ms *= NO_CUDA_GRAPH_FACTOR
    if custom_ar:
        ms += CUSTOM_AR_COST_MS
    return ms


@dataclass(frozen=True)
class Checkpoint:
    """What the modelled server loads: the campaign's Kimi-K2.5, or a local HF checkpoint."""

    arch: str
    model_type: str
    weights_total_gib: float
    context_len: int


KIMI = Checkpoint(MODEL_ARCH, MODEL_TYPE, WEIGHTS_TOTAL_GIB, CONTEXT_LEN)


def checkpoint_for(model_path: str) -> Checkpoint:
    """A local folder with config.json (e.g. the tiny model the real-server tier serves) is
    modelled as itself: its architecture, context length and safetensors bytes as weights, so
    ``--tp 1`` serves as the real server does with it. Anything else is the campaign's model."""
    from pathlib import Path

    folder = Path(model_path)
    try:
        import json

        config = json.loads((folder / "config.json").read_text())
        weights = sum(f.stat().st_size for f in folder.glob("*.safetensors")) / GIB
    except (OSError, ValueError):
        return KIMI
    arch = (config.get("architectures") or [MODEL_ARCH])[0]
    return Checkpoint(arch, config.get("model_type", "unknown"), weights,
                      int(config.get("max_position_embeddings") or CONTEXT_LEN))


def _mean_length(rates: tuple[float, ...]) -> float:
    """1 + expected accepted drafts of a chain that stops at its first rejection."""
    total, reach = 1.0, 1.0
    for p in rates:
        reach *= p
        total += reach
    return total


def plan_for(ns, env: Mapping[str, str] | None = None, n_gpus: int | None = None) -> Plan:
    """Resolve a parsed namespace (tuiapp.sim.args) plus environment into a Plan."""
    env = os.environ if env is None else env
    n_gpus = n_gpus if n_gpus is not None else getattr(ns, "sim_gpus", 8)
    tp = ns.tp_size
    dp = max(ns.dp_size, 1)
    attn_dp = ns.attn_dp_size > 1
    ep = ns.ep_size
    a2a = ns.moe_a2a_backend or "none"
    ep_adjusted_from = None
    if a2a != "none" and ep != tp:
        ep_adjusted_from, ep = ep, tp

    spec_alg = (ns.speculative_algorithm or "").upper() or None
    spec = spec_alg is not None
    steps, topk, draft = ns.speculative_num_steps, ns.speculative_eagle_topk, ns.speculative_num_draft_tokens
    adjusted = False
    failure: str | None = None
    if spec:
        if steps is None and (topk is not None or draft is not None):
            failure = "spec_args_assert"
        steps = steps if steps is not None else 3
        topk = topk if topk is not None else 1
        draft = draft if draft is not None else steps + 1
        if topk == 1 and draft != steps + 1:
            draft, adjusted = steps + 1, True
    else:
        steps, topk, draft = 0, 1, 1

    cuda_graph = not (
        ns.disable_cuda_graph
        or ns.disable_decode_cuda_graph
        or (ns.cuda_graph_backend_decode or "full") == "disabled"
    )
    max_bs = ns.cuda_graph_max_bs_decode or ns.cuda_graph_max_bs or DEFAULT_MAX_BS
    if ns.max_running_requests:
        max_bs = min(max_bs, ns.max_running_requests)
    mem_fraction = ns.mem_fraction_static if ns.mem_fraction_static is not None else DEFAULT_MEM_FRACTION
    decode_steps = max(ns.num_continuous_decode_steps, 1)
    custom_ar = _truthy(env.get("SGLANG_FORCE_CUSTOM_ALLREDUCE")) and not ns.disable_custom_all_reduce
    nccl_tree = "tree" in env.get("NCCL_ALGO", "").lower()

    step_ms = step_ms_breakdown(max_bs, mem_fraction, decode_steps, cuda_graph, custom_ar)
    eager_ms = step_ms_breakdown(max_bs, mem_fraction, decode_steps, False, custom_ar)
    if spec:
        step_ms += VERIFY_ALLREDUCE_MS + DRAFT_STEP_MS * steps
        eager_ms += VERIFY_ALLREDUCE_MS + DRAFT_STEP_MS * steps

    total_gib = TORCH_TOTAL_GIB
    weights = checkpoint_for(ns.model_path).weights_total_gib / tp
    draft_w = DRAFT_WEIGHTS_GIB * 8 / tp if spec else 0.0
    ar_gib = CUSTOM_AR_BUFFERS_GIB if custom_ar else 0.0
    avail_after = total_gib - CONTEXT_GIB - ar_gib - weights - draft_w
    kv = avail_after - total_gib * (1.0 - mem_fraction)
    g_gib = graphs_gib(max_bs, spec, draft) if cuda_graph else 0.0
    per_token = KV_BYTES_PER_TOKEN * (1 + (1 / NUM_LAYERS if spec else 0))
    kv_tokens = max(int(kv * GIB / per_token), 0)
    if getattr(ns, "max_total_tokens", None):  # SGLang caps the pool, it never grows it
        kv_tokens = min(kv_tokens, ns.max_total_tokens)
    kv_pool_gib = min(kv, kv_tokens * per_token / GIB) if kv > 0 else kv
    mem = MemoryPlan(CONTEXT_GIB, weights, draft_w, kv_pool_gib, g_gib, ar_gib)

    if failure is None:
        # --nnodes: each node holds its share of the ranks on its own GPUs
        if -(-(tp if attn_dp else tp * dp) // max(getattr(ns, "nnodes", 1) or 1, 1)) > n_gpus:
            failure = "too_few_gpus"
        elif ns.enable_torch_symm_mem and tp > 1:
            failure = "torch_symm_mem_keyerror"
        elif avail_after < 0.5:
            failure = "load_oom"
        elif kv <= 0.2:
            failure = "kv_not_enough"
        elif a2a == "flashinfer" and "flashinfer" in (ns.moe_runner_backend or ""):
            failure = "ep_flashinfer_assert_oom"
        elif cuda_graph and (ns.enable_flashinfer_allreduce_fusion or ns.flashinfer_allreduce_fusion_backend) and tp > 1:
            failure = "flashinfer_jit_sm120"
        elif cuda_graph and total_gib * (1.0 - mem_fraction) < g_gib + 1.5:
            failure = "graph_capture_oom"
        elif cuda_graph and nccl_tree and tp > 1:
            failure = "nccl_tree_graph"

    max_running = ns.max_running_requests or 2048
    return Plan(
        tp_size=tp,
        dp_size=dp,
        attn_dp=attn_dp,
        ep_size=ep,
        ep_adjusted_from=ep_adjusted_from,
        n_gpus=n_gpus,
        cuda_graph=cuda_graph,
        cuda_graph_max_bs=max_bs,
        capture_bs=capture_bs_list(max_bs, spec),
        mem_fraction_static=round(mem_fraction, 3),
        decode_steps=decode_steps,
        custom_ar=custom_ar,
        spec=spec,
        spec_algorithm=spec_alg,
        spec_num_steps=steps,
        spec_topk=topk,
        spec_draft_tokens=draft,
        spec_tokens_adjusted=adjusted,
        step_s=step_ms / 1000.0,
        accept_p=ACCEPT_P,
        mem=mem,
        kv_tokens=kv_tokens,
        max_running_requests=max_running,
        chunked_prefill_size=ns.chunked_prefill_size or CHUNKED_PREFILL_SIZE,
        failure=failure,
        eager_step_s=eager_ms / 1000.0,
        max_prefill_tokens=getattr(ns, "max_prefill_tokens", None) or MAX_PREFILL_TOKENS,
        accept_rates=tuple(getattr(ns, "sim_spec_accept", None) or ()),
        spec_adaptive=bool(getattr(ns, "sim_spec_adaptive", False)) and steps > 1,
    )


def expected_tok_s(argv: list[str], env: Mapping[str, str] | None = None) -> float | None:
    """Single-stream decode tok/s the modelled server gives for these flags (None: it fails).

    Pure: parses ``argv`` with the simulator's parser; ``env`` (default: empty) stands for
    the server's environment, the calling process's environment is never read.
    """
    from tuiapp.sim.args import parse_args

    ns = parse_args(argv)
    plan = plan_for(ns, env or {})
    if plan.failure is not None:
        return None
    return plan.expected_tok_s
