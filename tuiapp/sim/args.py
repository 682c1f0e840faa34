"""SGLang's server flags, as `python -m sglang.launch_server` parses them.

The simulator imitates **sglang 0.5.23** (field names, defaults, `--help` layout from a
plain ``argparse.ArgumentParser`` with prefix abbreviation on, so ``--tp`` means
``--tp-size``), and additionally accepts the older spellings the campaign used
(``--cuda-graph-max-bs``, ``--cuda-graph-bs``, ``--disable-cuda-graph``,
``--enable-flashinfer-allreduce-fusion``, ``--enable-dp-attention``). Real 0.5.23 rejects
``--cuda-graph-max-bs`` as ambiguous; accepting it is a deliberate choice so the
campaign's command lines run unchanged. Simulator-only options start with ``--sim-``.
"""

from __future__ import annotations

import argparse
import json

# (flags, kwargs); dest is SGLang's ServerArgs field name.
_FLAGS: list[tuple[tuple[str, ...], dict]] = [
    (("--model-path", "--model"), dict(type=str, required=True, help="The path of the model weights. This can be a local folder or a Hugging Face repo ID.")),
    (("--tokenizer-path",), dict(type=str, default=None, help="The path of the tokenizer.")),
    (("--tokenizer-mode",), dict(type=str, default="auto", choices=["auto", "slow"], help="Tokenizer mode.")),
    (("--skip-tokenizer-init",), dict(action="store_true", help="If set, skip init tokenizer and pass input_ids in generate request.")),
    (("--load-format",), dict(type=str, default="auto", help="The format of the model weights to load.")),
    (("--trust-remote-code",), dict(action="store_true", help="Whether or not to allow for custom models defined on the Hub in their own modeling files.")),
    (("--context-length",), dict(type=int, default=None, help="The model's maximum context length.")),
    (("--dtype",), dict(type=str, default="auto", help="Data type for model weights and activations.")),
    (("--kv-cache-dtype",), dict(type=str, default="auto", help="Data type for kv cache storage.")),
    (("--quantization",), dict(type=str, default=None, help="The quantization method.")),
    (("--served-model-name",), dict(type=str, default=None, help="Override the model name returned by the v1/models endpoint in OpenAI API server.")),
    (("--chat-template",), dict(type=str, default=None, help="The builtin chat template name or the path of the chat template file.")),
    (("--revision",), dict(type=str, default=None, help="The specific model version to use.")),
    (("--host",), dict(type=str, default="127.0.0.1", help="The host of the HTTP server.")),
    (("--port",), dict(type=int, default=30000, help="The port of the HTTP server.")),
    (("--nccl-port",), dict(type=int, default=None, help="The port for NCCL distributed environment setup.")),
    (("--device",), dict(type=str, default=None, help="The device to use ('cuda', 'xpu', 'hpu', 'npu', 'cpu').")),
    (("--base-gpu-id",), dict(type=int, default=0, help="The base GPU ID to start allocating GPUs from.")),
    (("--tp-size", "--tensor-parallel-size"), dict(type=int, default=1, help="The tensor parallelism size.")),
    (("--pp-size", "--pipeline-parallel-size"), dict(type=int, default=1, help="The pipeline parallelism size.")),
    (("--dp-size", "--data-parallel-size"), dict(type=int, default=1, help="The data parallelism size.")),
    (("--attn-dp-size",), dict(type=int, default=1, help="The attention data parallelism size.")),
    (("--enable-dp-attention",), dict(action="store_true", help="[older] Enable data parallelism for attention and tensor parallelism for FFN.")),
    (("--ep-size", "--expert-parallel-size", "--ep"), dict(type=int, default=1, help="The expert parallelism size.")),
    (("--moe-a2a-backend",), dict(type=str, default="none", choices=["none", "deepep", "mooncake", "nixl", "mori", "ascend_fuseep", "flashinfer", "megamoe", "deepep_v2", "pplx", "ascend_tp", "flashinfer_megamoe"], help="Choose the backend for MoE A2A.")),
    (("--moe-runner-backend",), dict(type=str, default="auto", choices=["auto", "deep_gemm", "triton", "triton_kernel", "flashinfer_trtllm", "experimental_sgl_trtllm", "flashinfer_trtllm_routed", "flashinfer_cutlass", "flashinfer_mxfp4", "flashinfer_cutedsl", "flashinfer_megamoe", "cutlass", "aiter", "marlin", "humming", "experimental_sgl_marlin", "lora_cutedsl", "lora_triton", "lora_marlin", "hpc_ops", "megamoe", "intel_xpu"], help="Choose the runner backend for MoE.")),
    (("--deepep-mode",), dict(type=str, default="auto", choices=["normal", "low_latency", "auto"], help="Select the mode when enable DeepEP MoE.")),
    (("--enable-eplb",), dict(action="store_true", help="Enable EPLB algorithm.")),
    (("--ep-num-redundant-experts",), dict(type=int, default=0, help="Allocate this number of redundant experts in expert parallel.")),
    (("--moe-dense-tp-size",), dict(type=int, default=None, help="TP size for MoE dense MLP layers.")),
    (("--enable-two-batch-overlap",), dict(action="store_true", help="Enabling two micro batches to overlap.")),
    (("--enable-single-batch-overlap",), dict(action="store_true", help="Let computation and communication overlap within one micro batch.")),
    (("--flashinfer-allreduce-fusion-backend",), dict(type=str, default=None, choices=["auto", "trtllm", "mnnvl", "cutedsl"], help="Backend of FlashInfer allreduce fusion (enables the fusion).")),
    (("--enable-flashinfer-allreduce-fusion",), dict(action="store_true", help="(Deprecated) Use --flashinfer-allreduce-fusion-backend=auto instead.")),
    (("--enforce-disable-flashinfer-allreduce-fusion",), dict(action="store_true", help="Never auto-enable FlashInfer allreduce fusion.")),
    (("--disable-custom-all-reduce",), dict(action="store_true", help="Disable the custom all-reduce kernel and fall back to NCCL.")),
    (("--enable-torch-symm-mem",), dict(action="store_true", help="Enable using torch symm mem for all-reduce kernel and fall back to NCCL. SM90 supports world size 4, 6, 8. SM100 supports world size 6, 8.")),
    (("--enable-symm-mem",), dict(action="store_true", help="Enable NCCL symmetric memory for fast collectives.")),
    (("--enable-mscclpp",), dict(action="store_true", help="Enable using mscclpp for small messages for all-reduce kernel.")),
    (("--enable-nccl-nvls",), dict(action="store_true", help="Enable NCCL NVLS for prefill heavy requests when available.")),
    (("--attention-backend",), dict(type=str, default=None, help="Choose the kernels for attention layers.")),
    (("--cuda-graph-config",), dict(type=str, default=None, help='JSON, e.g. {"decode":{"backend":"full","max_bs":256}} (wins over the flags).')),
    (("--cuda-graph-max-bs-decode",), dict(type=int, default=None, help="Set the maximum batch size for decode cuda graph.")),
    (("--cuda-graph-max-bs-prefill",), dict(type=int, default=None, help="Set the maximum number of tokens for prefill cuda graph.")),
    (("--cuda-graph-bs-decode",), dict(type=int, nargs="+", default=None, help="Set the list of batch sizes for decode cuda graph.")),
    (("--cuda-graph-bs-prefill",), dict(type=int, nargs="+", default=None, help="Set the list of token counts for prefill cuda graph.")),
    (("--cuda-graph-backend-decode",), dict(type=str, default=None, choices=["full", "breakable", "disabled"], help="Decode CUDA graph backend.")),
    (("--cuda-graph-backend-prefill",), dict(type=str, default=None, choices=["full", "breakable", "disabled"], help="Prefill CUDA graph backend.")),
    (("--disable-decode-cuda-graph",), dict(action="store_true", help="Disable decode cuda graph.")),
    (("--disable-prefill-cuda-graph",), dict(action="store_true", help="Disable prefill cuda graph.")),
    (("--cuda-graph-max-bs",), dict(type=int, default=None, help="[older spelling] Set the maximum batch size for cuda graph (= --cuda-graph-max-bs-decode).")),
    (("--cuda-graph-bs",), dict(type=int, nargs="+", default=None, help="[older spelling] Set the list of batch sizes for cuda graph (= --cuda-graph-bs-decode).")),
    (("--disable-cuda-graph",), dict(action="store_true", help="(Deprecated) Disable cuda graph for both phases.")),
    (("--enable-torch-compile",), dict(action="store_true", help="Optimize the model with torch.compile.")),
    (("--mem-fraction-static",), dict(type=float, default=None, help="The fraction of the memory used for static allocation (model weights and KV cache memory pool).")),
    (("--max-running-requests",), dict(type=int, default=None, help="The maximum number of running requests.")),
    (("--max-queued-requests",), dict(type=int, default=None, help="The maximum number of queued requests.")),
    (("--max-total-tokens",), dict(type=int, default=None, help="The maximum number of tokens in the memory pool.")),
    (("--chunked-prefill-size",), dict(type=int, default=None, help="The maximum number of tokens in a chunk for the chunked prefill. -1 disables it.")),
    (("--max-prefill-tokens",), dict(type=int, default=16384, help="The maximum number of tokens in a prefill batch.")),
    (("--schedule-policy",), dict(type=str, default="fcfs", choices=["lpm", "random", "fcfs", "dfs-weight", "lof", "priority"], help="The scheduling policy of the requests.")),
    (("--schedule-conservativeness",), dict(type=float, default=1.0, help="How conservative the schedule policy is.")),
    (("--num-continuous-decode-steps",), dict(type=int, default=1, help="Run multiple continuous decoding steps to reduce scheduling overhead.")),
    (("--disable-radix-cache",), dict(action="store_true", help="Disable RadixAttention for prefix caching.")),
    (("--disable-overlap-schedule",), dict(action="store_true", help="Disable the overlap scheduler.")),
    (("--enable-mixed-chunk",), dict(action="store_true", help="Enabling mixing prefill and decode in a batch when using chunked prefill.")),
    (("--speculative-algorithm",), dict(type=str, default=None, help="Speculative algorithm (EAGLE, EAGLE3, NEXTN, STANDALONE, NGRAM, DFLASH, DSPARK, UNO).")),
    (("--speculative-draft-model-path", "--speculative-draft-model"), dict(type=str, default=None, help="The path of the draft model weights.")),
    (("--speculative-num-steps",), dict(type=int, default=None, help="The number of steps sampled from draft model in Speculative Decoding.")),
    (("--speculative-eagle-topk",), dict(type=int, default=None, help="The number of tokens sampled from the draft model in eagle2 each step.")),
    (("--speculative-num-draft-tokens",), dict(type=int, default=None, help="The number of tokens sampled from the draft model in Speculative Decoding.")),
    (("--speculative-moe-runner-backend",), dict(type=str, default=None, help="MoE runner backend of the draft model.")),
    (("--stream-interval",), dict(type=int, default=1, help="The interval (or buffer size) for streaming in terms of the token length.")),
    (("--incremental-streaming-output",), dict(action="store_true", help="Whether to output as a sequence of disjoint segments.")),
    (("--stream-response-default-include-usage",), dict(action="store_true", help="Include usage in streamed OpenAI responses by default.")),
    (("--random-seed",), dict(type=int, default=None, help="The random seed.")),
    (("--watchdog-timeout",), dict(type=float, default=300, help="Set watchdog timeout in seconds.")),
    (("--soft-watchdog-timeout",), dict(type=float, default=None, help="Soft watchdog timeout in seconds (dump stacks, do not crash).")),
    (("--dist-init-addr",), dict(type=str, default=None, help="The host address for initializing distributed backend.")),
    (("--nnodes",), dict(type=int, default=1, help="The number of nodes.")),
    (("--node-rank",), dict(type=int, default=0, help="The node rank.")),
    (("--api-key",), dict(type=str, default=None, help="Set API key of the server. It is also used in the OpenAI API compatible server.")),
    (("--admin-api-key",), dict(type=str, default=None, help="Set admin API key for administrative/control endpoints.")),
    (("--log-level",), dict(type=str, default="info", help="The logging level of all loggers.")),
    (("--log-level-http",), dict(type=str, default=None, help="The logging level of HTTP server.")),
    (("--log-requests",), dict(action="store_true", help="Log metadata, inputs, outputs of all requests.")),
    (("--decode-log-interval",), dict(type=int, default=40, help="The log interval of decode batch.")),
    (("--enable-metrics",), dict(action="store_true", help="Enable log prometheus metrics.")),
    (("--enable-metrics-for-all-schedulers",), dict(action="store_true", help="Enable --enable-metrics-for-all-schedulers.")),
    (("--enable-mfu-metrics",), dict(action="store_true", help="Enable estimated MFU metrics.")),
    (("--enable-cache-report",), dict(action="store_true", help="Return number of cached tokens in usage.prompt_tokens_details.")),
    (("--show-time-cost",), dict(action="store_true", help="Show time cost of custom marks.")),
    (("--sleep-on-idle",), dict(action="store_true", help="Reduce CPU usage when sglang is idle.")),
    (("--skip-server-warmup",), dict(action="store_true", help="If set, skip warmup.")),
    (("--tool-call-parser",), dict(type=str, default=None, help="Specify the parser for handling tool-call interactions.")),
    (("--reasoning-parser",), dict(type=str, default=None, help="Specify the parser for reasoning models.")),
    (("--weight-version",), dict(type=str, default="default", help="Version identifier for the model weights.")),
]

QUEUE_FULL_ANSWERS = ("abort", "503", "429")
SIM_FAULT_KINDS = ("oom", "decode_oom", "assertion", "nccl_timeout", "hang", "kv_pressure", "nan", "crash",
                   "rank_hang")


def _fault(text: str) -> tuple[str, float | None]:
    kind, _, at = text.partition("@")
    if kind not in SIM_FAULT_KINDS:
        raise argparse.ArgumentTypeError(f"unknown fault {kind!r}; one of {', '.join(SIM_FAULT_KINDS)}")
    try:
        return kind, (float(at) if at else None)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"bad fault time {at!r}") from exc


def _rates(text: str) -> tuple[float, ...]:
    try:
        rates = tuple(float(x) for x in text.split(","))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"bad acceptance list {text!r}") from exc
    if not rates or any(not 0.0 <= p <= 1.0 for p in rates):
        raise argparse.ArgumentTypeError(f"acceptance must be between 0 and 1: {text!r}")
    return rates


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    for flags, kwargs in _FLAGS:
        parser.add_argument(*flags, **kwargs)
    sim = parser.add_argument_group("simulator options (tuiapp.sim only)")
    sim.add_argument("--sim-speed", type=float, default=1.0, help="Time compression of startup and failure timing (2 = twice as fast). Decode pacing is never scaled.")
    sim.add_argument("--sim-seed", type=int, default=0, help="Seed for acceptance draws, interleaving and fault ranks.")
    sim.add_argument("--sim-gpus", type=int, default=8, help="Number of modelled GPUs (NVIDIA RTX PRO 6000 Blackwell, 96 GB, PCIe Gen5 x16).")
    sim.add_argument("--sim-fault", type=_fault, action="append", default=[], metavar="KIND[@SECONDS]", help=f"Inject a runtime fault SECONDS after ready (default: at the first decode step). KIND: {', '.join(SIM_FAULT_KINDS)}.")
    sim.add_argument("--sim-spec-accept", type=_rates, default=None, metavar="P1[,P2...]", help="Speculative acceptance of each draft position given the one before was accepted (one value: every position; default 0.81).")
    sim.add_argument("--sim-spec-adaptive", action="store_true", help="Every other verify step has a budget of one draft fewer (adaptive steps): later positions go unobserved, not rejected.")
    sim.add_argument("--sim-old-loads", action="store_true", help="A server before /v1/loads (SGLang #23010): a 404 there, /get_load (a scheduler RPC) only.")
    sim.add_argument("--sim-metric-names", choices=("colon", "underscore"), default="colon", help="Spell /metrics names sglang:x (the server) or sglang_x (a router's /engine_metrics, Prometheus escaping).")
    sim.add_argument("--sim-post-ready-jit-s", type=float, default=0.0, metavar="S", help="The first prefill after ready waits S seconds (scaled by --sim-speed) on a lazy JIT compile, counted as the main branch counts start-up work after ready (sglang:post_startup_time_seconds_total{phase=\"deepgemm_jit\"}).")
    sim.add_argument("--sim-step-ms", type=float, default=None, help="Override the modelled decode step at batch 1; prefill time scales with it (benchmarks of the simulator itself).")
    sim.add_argument("--sim-queue-full-status", choices=QUEUE_FULL_ANSWERS, default="abort", help="How a request beyond --max-queued-requests is refused: abort (0.5.23: a stream gets HTTP 200 and an in-stream abort, a non-streaming request HTTP 503), 503 (HTTP 503 before any stream, as older servers), 429 (HTTP 429 with an empty body, as the SGLang Model Gateway's queue).")
    return parser


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    ns = build_parser().parse_args(argv)
    if ns.cuda_graph_config:
        try:
            decode = json.loads(ns.cuda_graph_config).get("decode", {})
        except (ValueError, AttributeError):
            decode = {}
        if decode.get("max_bs"):
            ns.cuda_graph_max_bs_decode = int(decode["max_bs"])
        if decode.get("backend"):
            ns.cuda_graph_backend_decode = decode["backend"]
    if ns.cuda_graph_bs and not ns.cuda_graph_bs_decode:
        ns.cuda_graph_bs_decode = ns.cuda_graph_bs
    if ns.cuda_graph_bs_decode and not (ns.cuda_graph_max_bs_decode or ns.cuda_graph_max_bs):
        ns.cuda_graph_max_bs_decode = max(ns.cuda_graph_bs_decode)
    if ns.enable_dp_attention and ns.attn_dp_size == 1:
        ns.attn_dp_size = ns.dp_size
    return ns


_GRAPH_EXTRA = {"tc_compiler": "eager", "max_context_size": None, "full_prefill_max_req": None,
                "full_prefill_prefix_chunk_tokens": None, "max_seq_len": None}


def resolved_server_args(ns: argparse.Namespace, plan) -> dict:
    """Every ServerArgs field with auto values filled in, as /server_info and the log show."""
    out = {k: v for k, v in vars(ns).items() if not k.startswith("sim_")}
    for old in ("cuda_graph_max_bs", "cuda_graph_bs", "disable_cuda_graph", "enable_flashinfer_allreduce_fusion", "enable_dp_attention"):
        out.pop(old, None)
    out.update(
        tokenizer_path=ns.tokenizer_path or ns.model_path,
        disaggregation_mode="null",
        served_model_name=ns.served_model_name or ns.model_path,
        context_length=ns.context_length,
        ep_size=plan.ep_size,
        mem_fraction_static=plan.mem_fraction_static,
        chunked_prefill_size=plan.chunked_prefill_size,
        max_running_requests=ns.max_running_requests,
        cuda_graph_max_bs_decode=plan.cuda_graph_max_bs,
        cuda_graph_bs_decode=plan.capture_bs,
        cuda_graph_backend_decode="full" if plan.cuda_graph else "disabled",
        cuda_graph_config={  # 0.5.23's resolved config, both phases
            "decode": {"backend": "full" if plan.cuda_graph else "disabled", "max_bs": plan.cuda_graph_max_bs,
                       "bs": plan.capture_bs, **_GRAPH_EXTRA},
            "prefill": {"backend": "disabled", "max_bs": plan.chunked_prefill_size, "bs": [], **_GRAPH_EXTRA}},
        speculative_moe_runner_backend=ns.speculative_moe_runner_backend or "auto",
        flashinfer_allreduce_fusion_backend=ns.flashinfer_allreduce_fusion_backend or ("auto" if ns.enable_flashinfer_allreduce_fusion else None),
        random_seed=ns.random_seed if ns.random_seed is not None else 1,
        device=ns.device or "cuda",
        nccl_port=ns.nccl_port,  # 0.5.23 picks the port later; server_info keeps the flag
    )
    if plan.spec:
        out.update(
            speculative_algorithm=plan.spec_algorithm,
            speculative_num_steps=plan.spec_num_steps,
            speculative_eagle_topk=plan.spec_topk,
            speculative_num_draft_tokens=plan.spec_draft_tokens,
        )
    return out
