"""A stand-in for ``python -m sglang.launch_server`` built with real argparse.

``argparse_server.py PROFILE [flags...]``: PROFILE is ``0.5.23`` or ``0.5.2`` (an older
release). ``--help`` prints argparse's help for that version's flags (a subset of SGLang's,
same names, groups and kinds); otherwise the flags are parsed exactly as argparse would
and ``parsed-ok`` is printed, or argparse's error (exit 2). Tests use it both as the
server command for preflight and as the referee for what argparse accepts.
"""

import argparse
import sys

COMMON = [
    ("Model and tokenizer", [
        (["--tokenizer-path"], dict(type=str, help="The path of the tokenizer.")),
        (["--tokenizer-mode"], dict(type=str, default="auto", choices=["auto", "slow"], help="Tokenizer mode.")),
        (["--skip-tokenizer-init"], dict(action="store_true", help="If set, skip init tokenizer and pass input_ids in generate request.")),
        (["--load-format"], dict(type=str, default="auto", help="The format of the model weights to load.")),
        (["--trust-remote-code"], dict(action="store_true", help="Whether or not to allow for custom models defined on the Hub in their own modeling files.")),
        (["--context-length"], dict(type=int, help="The model's maximum context length.")),
        (["--quantization"], dict(type=str, help="The quantization method.")),
        (["--kv-cache-dtype"], dict(type=str, default="auto", choices=["auto", "fp8_e5m2", "fp8_e4m3", "bf16"], help='Data type for kv cache storage. "auto" will use model data type.')),
        (["--model-impl"], dict(type=str, default="auto", help="Which implementation of the model to use.")),
    ]),
    ("HTTP server", [
        (["--host"], dict(type=str, default="127.0.0.1", help="The host of the HTTP server.")),
        (["--port"], dict(type=int, default=30000, help="The port of the HTTP server.")),
        (["--skip-server-warmup"], dict(action="store_true", help="If set, skip warmup.")),
        (["--api-key"], dict(type=str, help="Set API key of the server. It is also used in the OpenAI API compatible server.")),
        (["--admin-api-key"], dict(type=str, help="Set admin API key for administrative/control endpoints.")),
        (["--served-model-name"], dict(type=str, help="Override the model name returned by the v1/models endpoint in OpenAI API server.")),
    ]),
    ("Memory and scheduling", [
        (["--mem-fraction-static"], dict(type=float, help="The fraction of the memory used for static allocation (model weights and KV cache memory pool). Use a smaller value if you see out-of-memory errors.")),
        (["--max-running-requests"], dict(type=int, help="The maximum number of running requests.")),
        (["--max-total-tokens"], dict(type=int, help="The maximum number of tokens in the memory pool.")),
        (["--chunked-prefill-size"], dict(type=int, help="The maximum number of tokens in a chunk for the chunked prefill. Setting this to -1 means disabling chunked prefill.")),
        (["--max-prefill-tokens"], dict(type=int, default=16384, help="The maximum number of tokens in a prefill batch.")),
        (["--schedule-policy"], dict(type=str, default="fcfs", choices=["lpm", "random", "fcfs", "dfs-weight"], help="The scheduling policy of the requests.")),
        (["--num-continuous-decode-steps"], dict(type=int, default=1, help="Run multiple continuous decoding steps to reduce scheduling overhead.")),
        (["--disable-radix-cache"], dict(action="store_true", help="Disable RadixAttention for prefix caching.")),
        (["--disable-overlap-schedule"], dict(action="store_true", help="Disable the overlap scheduler.")),
    ]),
    ("Parallelism", [
        (["--tp-size", "--tensor-parallel-size"], dict(type=int, default=1, help="The tensor parallelism size.")),
        (["--dp-size", "--data-parallel-size"], dict(type=int, default=1, help="The data parallelism size.")),
        (["--ep-size", "--expert-parallel-size", "--ep"], dict(type=int, default=1, help="The expert parallelism size.")),
        (["--moe-dense-tp-size"], dict(type=int, help="TP size for MoE dense MLP layers.")),
    ]),
    ("Logging and metrics", [
        (["--log-level"], dict(type=str, default="info", help="The logging level of all loggers.")),
        (["--log-level-http"], dict(type=str, help="The logging level of HTTP server. If not set, reuse --log-level by default.")),
        (["--log-requests"], dict(action="store_true", help="Log metadata, inputs, outputs of all requests.")),
        (["--enable-metrics"], dict(action="store_true", help="Enable log prometheus metrics.")),
        (["--decode-log-interval"], dict(type=int, default=40, help="The log interval of decode batch.")),
        (["--watchdog-timeout"], dict(type=float, default=300, help="Set watchdog timeout in seconds. If a forward batch takes longer than this, the server will crash to prevent hanging.")),
    ]),
    ("Speculative decoding", [
        (["--speculative-algorithm"], dict(type=str, help="Speculative algorithm.")),
        (["--speculative-num-steps"], dict(type=int, help="The number of steps sampled from draft model in Speculative Decoding.")),
        (["--speculative-eagle-topk"], dict(type=int, help="The number of tokens sampled from the draft model in eagle2 each step.")),
        (["--speculative-num-draft-tokens"], dict(type=int, help="The number of tokens sampled from the draft model in Speculative Decoding.")),
    ]),
]

NEW = [
    ("Model and tokenizer", [
        (["--model-path", "--model"], dict(type=str, required=True, help="The path of the model weights. This can be a local folder or a Hugging Face repo ID.")),
    ]),
    ("Speculative decoding", [
        (["--speculative-draft-model-path", "--speculative-draft-model"], dict(type=str, help="The path of the draft model weights.")),
        (["--speculative-moe-runner-backend"], dict(type=str, help="MoE backend for the draft model; defaults to --moe-runner-backend.")),
    ]),
    ("Parallelism", [
        (["--attn-dp-size"], dict(type=int, default=1, help="The attention data parallelism size (replaces --enable-dp-attention).")),
        (["--moe-a2a-backend"], dict(type=str, default="none", choices=["none", "deepep", "mooncake", "nixl", "mori", "ascend_fuseep", "flashinfer", "megamoe", "deepep_v2", "pplx", "ascend_tp", "flashinfer_megamoe"], help="Choose the backend for MoE A2A.")),
        (["--moe-runner-backend"], dict(type=str, default="auto", choices=["auto", "deep_gemm", "triton", "triton_kernel", "flashinfer_trtllm", "flashinfer_cutlass", "flashinfer_mxfp4", "cutlass", "marlin"], help="Choose the runner backend for MoE.")),
        (["--enable-dp-attention"], dict(action="store_true", help="Deprecated. Use --attn-dp-size N instead.")),
    ]),
    ("Kernels and communication", [
        (["--flashinfer-allreduce-fusion-backend"], dict(type=str, choices=["auto", "trtllm", "mnnvl", "cutedsl"], help="Backend of FlashInfer allreduce fusion. Default: auto-enabled for some MoE architectures when tp>1.")),
        (["--enable-flashinfer-allreduce-fusion"], dict(action="store_true", help="Deprecated. Please use --flashinfer-allreduce-fusion-backend=auto instead.")),
        (["--enforce-disable-flashinfer-allreduce-fusion"], dict(action="store_true", help="Never enable FlashInfer allreduce fusion.")),
        (["--disable-custom-all-reduce"], dict(action="store_true", help="Disable the custom all-reduce kernel and fall back to NCCL.")),
        (["--enable-torch-symm-mem"], dict(action="store_true", help="Enable using torch symm mem for all-reduce kernel and fall back to NCCL. Only supports CUDA device SM90 and above. SM90 supports world size 4, 6, 8. SM100 supports world size 6, 8.")),
        (["--enable-symm-mem"], dict(action="store_true", help="Enable NCCL symmetric memory for fast collectives.")),
        (["--enable-nccl-nvls"], dict(action="store_true", help="Enable NCCL NVLS for prefill heavy requests when available.")),
    ]),
    ("CUDA graphs", [
        (["--cuda-graph-config"], dict(type=str, help='JSON, e.g. {"decode":{"backend":"full","max_bs":256}}; wins over the flags below.')),
        (["--cuda-graph-backend-decode"], dict(type=str, choices=["full", "breakable", "disabled"], help="Decode CUDA graph backend.")),
        (["--cuda-graph-backend-prefill"], dict(type=str, choices=["full", "breakable", "disabled"], help="Prefill CUDA graph backend.")),
        (["--cuda-graph-max-bs-decode"], dict(type=int, help="Set the maximum batch size for decode cuda graph. It will extend the cuda graph capture batch size to this value.")),
        (["--cuda-graph-max-bs-prefill"], dict(type=int, help="Set the maximum number of tokens for prefill cuda graph.")),
        (["--cuda-graph-bs-decode"], dict(type=int, nargs="+", help="Set the list of batch sizes for decode cuda graph.")),
        (["--cuda-graph-bs-prefill"], dict(type=int, nargs="+", help="Set the list of token counts for prefill cuda graph.")),
        (["--disable-decode-cuda-graph"], dict(action="store_true", help="Disable decode cuda graph.")),
        (["--disable-prefill-cuda-graph"], dict(action="store_true", help="Disable prefill cuda graph.")),
        (["--disable-cuda-graph"], dict(action="store_true", help="Deprecated: disables decode and prefill cuda graphs. Use --disable-decode-cuda-graph and --disable-prefill-cuda-graph.")),
        (["--disable-cuda-graph-padding"], dict(action="store_true", help="Disable cuda graph when padding is needed. Still uses cuda graph when padding is not needed.")),
    ]),
    ("Logging and metrics", [
        (["--enable-metrics-for-all-schedulers"], dict(action="store_true", help="Enable --enable-metrics-for-all-schedulers when you want schedulers on all TP ranks (not just TP 0) to record request metrics separately.")),
        (["--enable-mfu-metrics"], dict(action="store_true", help="Enable estimated MFU-related prometheus metrics.")),
        (["--soft-watchdog-timeout"], dict(type=float, help="Log a warning (no crash) when a forward batch takes longer than this.")),
    ]),
]

OLD = [
    ("Model and tokenizer", [
        (["--model-path"], dict(type=str, required=True, help="The path of the model weights. This can be a local folder or a Hugging Face repo ID.")),
        (["--model-loader-extra-config"], dict(type=str, default="{}", help="Extra config for model loader.")),
    ]),
    ("Speculative decoding", [
        (["--speculative-draft-model-path"], dict(type=str, help="The path of the draft model weights. This can be a local folder or a Hugging Face repo ID.")),
    ]),
    ("Parallelism", [
        (["--enable-dp-attention"], dict(action="store_true", help="Enabling data parallelism for attention and tensor parallelism for FFN. The dp size should be equal to the tp size.")),
        (["--enable-ep-moe"], dict(action="store_true", help="Enabling expert parallelism for moe. The ep size is equal to the tp size.")),
    ]),
    ("Kernels and communication", [
        (["--enable-flashinfer-allreduce-fusion"], dict(action="store_true", help="Enable FlashInfer allreduce fusion for Add_RMSNorm.")),
        (["--disable-custom-all-reduce"], dict(action="store_true", help="Disable the custom all-reduce kernel and fall back to NCCL.")),
        (["--enable-torch-symm-mem"], dict(action="store_true", help="Enable using torch symm mem for all-reduce kernel.")),
    ]),
    ("CUDA graphs", [
        (["--cuda-graph-max-bs"], dict(type=int, help="Set the maximum batch size for cuda graph. It will extend the cuda graph capture batch size to this value.")),
        (["--cuda-graph-bs"], dict(type=int, nargs="+", help="Set the list of batch sizes for cuda graph.")),
        (["--disable-cuda-graph"], dict(action="store_true", help="Disable cuda graph.")),
        (["--disable-cuda-graph-padding"], dict(action="store_true", help="Disable cuda graph when padding is needed. Still uses cuda graph when padding is not needed.")),
    ]),
]

PROFILES = {"0.5.23": NEW, "0.5.2": OLD}


def build_parser(profile: str) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="launch_server.py")
    groups: dict[str, argparse._ArgumentGroup] = {}
    for title, flags in [*PROFILES[profile], *COMMON]:
        group = groups.get(title) or groups.setdefault(title, parser.add_argument_group(title))
        for names, kwargs in flags:
            group.add_argument(*names, **kwargs)
    return parser


def main() -> int:
    profile = sys.argv[1]
    args = build_parser(profile).parse_args(sys.argv[2:])
    print("parsed-ok", vars(args).get("port"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
